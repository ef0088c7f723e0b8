"""The quality report: the notebook (package data: ``quality_report.ipynb``,
executed by ``pipeline report``), its tables and figures (:mod:`.report`),
and the renderer (:mod:`.render`). It reads stores and run logs only."""
