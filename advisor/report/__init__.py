"""Every output of the commands, from the typed results `decide/` and `calibrate/` hand it: `sink.py` (one JSON
document, streamed JSON, CSV, lines on stdout, warnings on stderr), rich tables, matplotlib figures and the progress
bar. It formats; it computes nothing, and never imports `advisor.commands`."""
