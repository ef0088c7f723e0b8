import numpy as np

from shgcn.pipeline.sources.tokens import count_lines, tokenize


def test_tokens_with_comments_crlf_tabs_and_trailing_tokens():
    t = tokenize(b"# c\r\n1\t2\r\n 3 4 {}\n\n% x\n10 200 5.5\n7 8", max_cols=2)
    assert t.error is None
    np.testing.assert_array_equal(t.values, [1, 2, 3, 4, 10, 200, 7, 8])
    np.testing.assert_array_equal(t.line, [1, 1, 2, 2, 5, 5, 6, 6])
    np.testing.assert_array_equal(t.col, [0, 1] * 4)
    np.testing.assert_array_equal(t.comment_lines, [0, 4])
    assert t.n_lines == 7


def test_large_numbers_parse_exactly():
    t = tokenize(b"123456789012345678 0\n")
    assert t.values.tolist() == [123456789012345678, 0]


def test_errors_name_the_chunk_line():
    assert tokenize(b"1 2\n3 x\n").error.line == 1
    e = tokenize(b"1 2\n\n-3 4\n").error
    assert e.line == 2 and "negative id" in e.message
    assert "too large" in tokenize(b"1 1234567890123456789\n").error.message
    assert "non-numeric" in tokenize(b"1 2.5\n").error.message


def test_count_lines():
    assert count_lines(b"") == 0
    assert count_lines(b"a\nb") == 2
    assert count_lines(b"a\nb\n") == 2
