"""The `episodic` command line: commands, status, plots, demo, serve."""
