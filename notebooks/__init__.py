"""Report notebooks, shipped as package data of ``shgcn.notebooks``
(``pipeline report`` executes ``quality_report.ipynb`` from here)."""
