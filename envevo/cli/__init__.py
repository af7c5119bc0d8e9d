"""Command line: thin typer commands that parse, call the library and print."""
