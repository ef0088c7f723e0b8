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


def test_options_in_the_callers_words():
    from shgcn.pipeline.errors import api_words, option

    assert option("--features", "random:D") == "--features random:D"
    assert option("--split", (0.6, 0.2, 0.2), "0.6,0.2,0.2") == "--split 0.6,0.2,0.2"
    with api_words():
        assert option("--features", "random:D") == 'features="random:D"'
        assert option("--split", (0.6, 0.2, 0.2), "0.6,0.2,0.2") == "split=(0.6, 0.2, 0.2)"
        assert option("--undirected") == "directed=False" and option("--model", "x", "'x'") == 'models="x"'
        assert option("--memory-limit") == "memory_limit"
    assert option("--parts", 3) == "--parts 3"  # the command line's words again outside
