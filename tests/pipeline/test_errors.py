"""User errors (pipeline/errors.py): one line naming the file, and the line when known."""

from pathlib import Path

from shgcn.core.errors import UserError as CoreUserError
from shgcn.pipeline.errors import UserError, located


def test_located_names_the_file_and_the_line():
    e = located(Path("data/g.txt"), "bad token", 12)
    assert isinstance(e, UserError) and str(e) == "data/g.txt:12: bad token"
    assert str(located("g.mtx", "empty file")) == "g.mtx: empty file"
    assert str(located("g", "x", 0)) == "g:0: x"  # line 0 is a line, not "no line"


def test_the_pipelines_user_error_is_the_shared_one():
    assert UserError is CoreUserError  # the CLI catches one class, whichever package raised it
