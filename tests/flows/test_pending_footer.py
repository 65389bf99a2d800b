"""A Parquet footer's pending value filled in place (flows/store/pending_footer.py): the file is byte for byte the
one written with the value in the first place, and a file the module did not prepare is refused untouched."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from judged.flows.store.pending_footer import fill_pending_value, pending_value

FRAME = pl.DataFrame({"a": range(500), "b": ["x"] * 500})


@pytest.mark.parametrize("value", [
    "short",
    '[{"n_rows": 500, "name": "é' + "r" * 200 + '"}]',  # a length whose varint takes two bytes, and a non-ASCII one
    "v" * 20_000,  # three bytes
])
def test_a_filled_in_footer_is_the_footer_written_with_the_value(tmp_path: Path, value: str) -> None:
    FRAME.write_parquet(tmp_path / "direct.parquet", row_group_size=64, metadata={"k": "v", "record": value})
    placeholder = pending_value()
    FRAME.write_parquet(tmp_path / "filled.parquet", row_group_size=64, metadata={"k": "v", "record": placeholder})
    fill_pending_value(tmp_path / "filled.parquet", placeholder, value)
    assert (tmp_path / "filled.parquet").read_bytes() == (tmp_path / "direct.parquet").read_bytes()
    assert pl.read_parquet(tmp_path / "filled.parquet").equals(FRAME)


def test_a_footer_without_the_placeholder_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "plain.parquet"
    FRAME.write_parquet(path, metadata={"record": "already known"})
    before = path.read_bytes()
    with pytest.raises(RuntimeError, match="does not hold the pending value once"):
        fill_pending_value(path, pending_value(), "value")
    assert path.read_bytes() == before


def test_a_placeholder_filled_once_is_not_filled_again(tmp_path: Path) -> None:
    path = tmp_path / "filled.parquet"
    placeholder = pending_value()
    FRAME.write_parquet(path, metadata={"record": placeholder})
    fill_pending_value(path, placeholder, "first")
    with pytest.raises(RuntimeError, match="pending value"):
        fill_pending_value(path, placeholder, "second")
    assert pl.read_parquet_metadata(path)["record"] == "first"


@pytest.mark.parametrize("content", [b"", b"PAR", b"not a parquet file at all\n", b"PAR1" + b"\x00" * 12])
def test_a_file_that_is_not_parquet_is_refused_untouched(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "run.txt"
    path.write_bytes(content)
    with pytest.raises(RuntimeError, match="not a Parquet file|pending value"):
        fill_pending_value(path, pending_value(), "value")
    assert path.read_bytes() == content


def test_a_footer_length_past_the_file_start_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "cut.parquet"
    content = b"PAR1" + b"\xff\xff\x00\x00PAR1"  # a footer of 65535 bytes in a 12-byte file
    path.write_bytes(content)
    with pytest.raises(RuntimeError, match="runs past its start"):
        fill_pending_value(path, pending_value(), "value")
    assert path.read_bytes() == content
