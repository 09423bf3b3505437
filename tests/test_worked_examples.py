"""The documentation's own worked examples, byte for byte (the strings are quoted from the seeds)."""

from __future__ import annotations

from pathlib import Path

from refmem import MemoryHandler


def test_listing_example(tmp_path: Path) -> None:
    memory = MemoryHandler(tmp_path / "memories")
    memory.execute({"command": "create", "path": "/memories/customer_service_guidelines.xml", "file_text": "g" * 1536})
    memory.execute({"command": "create", "path": "/memories/refund_policies.xml", "file_text": "r" * 2048})
    result = memory.execute({"command": "view", "path": "/memories"})
    assert result.output == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and "
        "node_modules:\n4.0K\t/memories\n1.5K\t/memories/customer_service_guidelines.xml\n"
        "2.0K\t/memories/refund_policies.xml"
    )
    assert result.is_error is False


def test_file_view_example(tmp_path: Path) -> None:
    memory = MemoryHandler(tmp_path / "memories")
    text = (
        "<guidelines>\n<addressing_customers>\n- Always address customers by their first name\n"
        "- Use empathetic language\n</addressing_customers>\n</guidelines>\n"
    )
    memory.execute({"command": "create", "path": "/memories/customer_service_guidelines.xml", "file_text": text})
    result = memory.execute({"command": "view", "path": "/memories/customer_service_guidelines.xml"})
    documented = (
        "Here's the content of /memories/customer_service_guidelines.xml with line numbers:\n     1\t<guidelines>\n"
        "     2\t<addressing_customers>\n     3\t- Always address customers by their first name\n"
        "     4\t- Use empathetic language\n"
    )
    assert result.output.startswith(documented)
    assert result.is_error is False


def test_line_number_example(tmp_path: Path) -> None:
    memory = MemoryHandler(tmp_path / "memories")
    lines = [f"line {n}" for n in range(1, 101)]
    lines[0], lines[1], lines[9], lines[99] = "Hello World", "This is line two", "Line ten", "Line one hundred"
    memory.execute({"command": "create", "path": "/memories/notes.txt", "file_text": "\n".join(lines) + "\n"})
    output = memory.execute({"command": "view", "path": "/memories/notes.txt"}).output.split("\n")
    assert output[0] == "Here's the content of /memories/notes.txt with line numbers:"
    for documented in ("     1\tHello World", "     2\tThis is line two", "    10\tLine ten", "   100\tLine one hundred"):
        assert documented in output
