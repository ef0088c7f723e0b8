"""What the report notebook imports: its tables (:mod:`.tables`) and
figures (:mod:`.figures`), read from a store and run logs only (the report
never imports :mod:`shgcn.pipeline`)."""

from .figures import (
    fig_bytes,
    fig_convergence,
    fig_degrees,
    fig_minibatch,
    fig_parts,
    fig_parts_vs_metis,
    fig_quality,
    fig_simulation,
    fig_time_split,
    fig_training,
    fig_volume_matrix,
)
from .tables import (
    SECTIONS,
    build_table,
    check_runs,
    load_runs,
    minibatch_table,
    predicted_bytes,
    quality_display,
    quality_table,
    run_labels,
    runs_table,
    sig3,
    simulation_note,
    simulation_table,
    warning_html,
)

__all__ = ["SECTIONS", "build_table", "check_runs", "fig_bytes", "fig_convergence", "fig_degrees", "fig_minibatch",
           "fig_parts", "fig_parts_vs_metis", "fig_quality", "fig_simulation", "fig_time_split", "fig_training",
           "fig_volume_matrix",
           "load_runs", "minibatch_table", "predicted_bytes", "quality_display", "quality_table", "run_labels",
           "runs_table", "sig3", "simulation_note", "simulation_table", "warning_html"]
