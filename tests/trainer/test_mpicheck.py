"""mpi4py's MPI against the launcher (trainer/mpicheck.py): the launcher read from its variables, the library's
family and name, the one line that names both, and the trainer's answer to a launcher of the other MPI."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.mpi import TRAIN

from shgcn.trainer import mpicheck
from shgcn.trainer.mpicheck import Launcher

MPICH = "MPICH Version:      5.0.2\nMPICH Release date: Fri Sep 25 20:45:26 UTC 2026\nMPICH ABI:          18:2:6\n"
OPEN_MPI = "Open MPI v5.0.11, package: Open MPI user@localhost Distribution, ident: 5.0.11, repo rev: v5.0.11rc1"
INTEL = "Intel(R) MPI Library 2021.10 for Linux* OS\n"
HYDRA = Launcher("MPICH's mpirun (Hydra)", "MPICH", "PMI_SIZE", 2, 0)


@pytest.mark.parametrize("env,expected", [
    ({}, None),
    ({"OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_RANK": "3", "PMIX_RANK": "3"},
     Launcher("Open MPI's mpirun", "Open MPI", "OMPI_COMM_WORLD_SIZE", 4, 3)),
    ({"PMI_SIZE": "2", "PMI_RANK": "0", "MPI_LOCALNRANKS": "2"}, HYDRA),
    ({"PMI_SIZE": "8", "PMI_RANK": "5"},
     Launcher("a PMI launcher (srun --mpi=pmi2, an MPICH-derived mpirun)", "", "PMI_SIZE", 8, 5)),
    ({"MV2_COMM_WORLD_SIZE": "2"}, Launcher("MVAPICH's mpirun_rsh", "MPICH", "MV2_COMM_WORLD_SIZE", 2, None)),
    ({"PMI_SIZE": "two"}, None),  # not a number: no launcher said anything
])
def test_the_launcher_from_its_variables(env, expected):
    assert mpicheck.detect(env) == expected


def test_the_librarys_family_and_short_name():
    assert [mpicheck.family(v) for v in (MPICH, OPEN_MPI, INTEL, "MPI VERSION : CRAY MPICH version 8.1", "x")] == \
        ["MPICH", "Open MPI", "MPICH", "MPICH", ""]
    assert [mpicheck.library_name(v) for v in (MPICH, OPEN_MPI, INTEL, "")] == \
        ["MPICH 5.0.2", "Open MPI v5.0.11", "Intel(R) MPI Library 2021.10 for Linux* OS", "an unknown MPI"]


def test_the_issues_case_is_one_line_naming_both(tmp_path):
    """MPICH's mpirun -n 2 (the mpich wheel's) under an mpi4py on Open MPI: refused before MPI_Init."""
    line = mpicheck.mismatch(HYDRA, OPEN_MPI, prefix=str(tmp_path))
    assert line == ("the job was started by MPICH's mpirun (Hydra) with 2 processes (PMI_SIZE=2) but mpi4py's MPI is "
                    "Open MPI v5.0.11, which do not work together: start it with Open MPI's mpirun, or have mpi4py "
                    "load MPICH's library (MPI4PY_LIBMPI=/path/to/libmpi.so; pip install 'shgcn[mpich]' brings "
                    "MPICH's)")


def test_the_other_way_round_names_this_environments_mpirun(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "mpirun").touch()
    ompi = Launcher("Open MPI's mpirun", "Open MPI", "OMPI_COMM_WORLD_SIZE", 4, 0)
    assert mpicheck.mismatch(ompi, MPICH, prefix=str(tmp_path)) == (
        "the job was started by Open MPI's mpirun with 4 processes (OMPI_COMM_WORLD_SIZE=4) but mpi4py's MPI is "
        f"MPICH 5.0.2, which do not work together: start it with MPICH's mpirun ({tmp_path}/bin/mpirun), or have "
        "mpi4py load Open MPI's library (MPI4PY_LIBMPI=/path/to/libmpi.so)")


def test_a_job_of_one_rank_that_a_launcher_started_as_several(tmp_path):
    """A launcher of no known family (PMI) is refused only once MPI_Init shows each process alone."""
    pmi = Launcher("a PMI launcher (srun --mpi=pmi2, an MPICH-derived mpirun)", "", "PMI_SIZE", 8, 0)
    assert mpicheck.mismatch(pmi, OPEN_MPI, prefix=str(tmp_path)) is None  # before MPI_Init: it may speak PMI
    assert mpicheck.mismatch(pmi, OPEN_MPI, 8, prefix=str(tmp_path)) is None  # one job of 8: they matched
    assert mpicheck.mismatch(pmi, OPEN_MPI, 1, prefix=str(tmp_path)) == (
        "the job was started by a PMI launcher (srun --mpi=pmi2, an MPICH-derived mpirun) with 8 processes "
        "(PMI_SIZE=8) but mpi4py's MPI is Open MPI v5.0.11, to which each process is a job of 1 rank: start it with "
        "Open MPI's mpirun, or have mpi4py load the launcher's MPI's library (MPI4PY_LIBMPI=/path/to/libmpi.so)")


@pytest.mark.parametrize("launcher,library,size", [
    (None, MPICH, None), (None, MPICH, 1),  # no launcher: a singleton, as `shgcn-train STORE` runs
    (HYDRA, MPICH, None), (HYDRA, MPICH, 2), (HYDRA, INTEL, None),  # the same family
    (Launcher("Open MPI's mpirun", "Open MPI", "OMPI_COMM_WORLD_SIZE", 1, 0), OPEN_MPI, 1),
    (HYDRA, "SomeMPI 1.0", None),  # an MPI of no known family: only its rank count can tell
])
def test_matching_launchers_pass(launcher, library, size):
    assert mpicheck.mismatch(launcher, library, size) is None


def test_no_library_names_what_it_tried_and_what_to_install():
    error = ("cannot load MPI library\n/v/lib/libmpi.so: cannot open shared object file: No such file or directory\n"
             "libmpi.so.40: cannot open shared object file: No such file or directory")
    assert mpicheck.no_library(error) == (
        "mpi4py found no MPI library (libmpi.so.40: cannot open shared object file: No such file or directory): "
        "install one: pip install 'shgcn[mpich]' (MPICH and its mpirun), or a system MPI (apt-get install mpich, or "
        "openmpi-bin)")


# ---------------------------------------------------------------- the trainer, started as a foreign launcher would

LAUNCHER_VARS = ("OMPI_", "PMI_", "PMIX_", "MPI_LOCAL", "MV2_", "HYDRA", "HYDI")


def clean_env(**extra) -> dict:
    """This environment without any launcher's variables (the suite may itself run under one), plus ``extra``."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_VARS)}, **extra}


@pytest.fixture(scope="module")
def library() -> str:
    res = subprocess.run([sys.executable, "-c", "from mpi4py import MPI; print(MPI.Get_library_version())"],
                         capture_output=True, text=True, timeout=120, env=clean_env())
    assert res.returncode == 0, res.stderr
    return res.stdout


def foreign(library: str, rank: int) -> dict[str, str]:
    """The variables of a 2-process launcher of the other family than ``library``'s."""
    if mpicheck.family(library) == "Open MPI":
        return {"PMI_SIZE": "2", "PMI_RANK": str(rank), "MPI_LOCALNRANKS": "2"}  # MPICH's Hydra
    return {"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": str(rank)}


def test_the_trainer_refuses_a_foreign_launcher_in_one_line(library, tmp_path):
    """Launched by the other MPI (its variables, as its mpirun sets them): exit 2 before the store is read, the
    launcher's rank 0 says one line naming both, the other ranks say nothing (each sees itself as rank 0)."""
    if not mpicheck.family(library):
        pytest.skip(f"mpi4py's MPI is of no known family: {mpicheck.library_name(library)}")
    cmd = [sys.executable, str(TRAIN), str(tmp_path / "nope.zarr")]
    env = foreign(library, 0)
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=clean_env(**env))
    expected = mpicheck.mismatch(mpicheck.detect(env), library, prefix=sys.prefix)
    assert (res.returncode, res.stderr) == (2, f"shgcn-train: error: {expected}\n")
    other = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=clean_env(**foreign(library, 1)))
    assert (other.returncode, other.stderr) == (2, "")


def test_the_trainer_without_an_mpi_library_says_what_to_install(tmp_path):
    """mpi4py's wheel loads the library it finds at run time (MPI4PY_LIBMPI names it): none found is one line."""
    import mpi4py

    if not list(Path(mpi4py.__file__).parent.glob("MPI.mpich.*")):
        pytest.skip("mpi4py was built against one MPI (not the wheel that loads one at run time)")
    res = subprocess.run([sys.executable, str(TRAIN), str(tmp_path / "nope.zarr")], capture_output=True, text=True,
                         timeout=120, env=clean_env(MPI4PY_LIBMPI=str(tmp_path / "libmpi.so")))
    assert res.returncode == 2
    assert res.stderr == (f"shgcn-train: error: mpi4py found no MPI library ({tmp_path}/libmpi.so: cannot open shared "
                          f"object file: No such file or directory): install one: {mpicheck.INSTALL}\n")


def test_srun_plugin_against_the_library():
    """srun's MPI plugin against mpi4py's MPI: none is refused for any MPI of several tasks, pmix under an MPICH
    configured without it, pmi2 under Open MPI; a matching plugin, one task or no srun is not."""
    mpich = "MPICH Version:      5.0.2\nMPICH configure:    --with-pm=hydra"
    ompi = "Open MPI v5.0.11, package: Debian"
    task = {"SLURM_STEP_NUM_TASKS": "2", "SLURM_PROCID": "0", "SLURM_STEP_ID": "0"}
    line = mpicheck.srun_mismatch(task, mpich)
    assert line is not None and "srun --mpi=none" in line and "MPICH 5.0.2" in line and "--mpi=pmi2" in line
    pmi2 = {**task, "SLURM_MPI_TYPE": "pmi2", "PMI_SIZE": "2", "PMI_RANK": "0", "PMI_FD": "5"}
    assert mpicheck.detect(pmi2).name == "srun --mpi=pmi2"
    assert mpicheck.srun_mismatch(pmi2, mpich) is None
    assert "--mpi=pmix" in (mpicheck.srun_mismatch(pmi2, ompi) or "")
    pmix = {**task, "SLURM_MPI_TYPE": "pmix_v4", "PMIX_RANK": "0"}
    assert mpicheck.srun_mismatch(pmix, ompi) is None
    assert mpicheck.srun_mismatch(pmix, mpich) is not None
    assert mpicheck.srun_mismatch(pmix, mpich + " --with-pmix") is None
    assert mpicheck.srun_mismatch({**task, "SLURM_STEP_NUM_TASKS": "1"}, mpich) is None
    assert mpicheck.srun_mismatch({**pmi2, "MPI_LOCALNRANKS": "2"}, ompi) is None  # Hydra's ranks: mpirun's check
