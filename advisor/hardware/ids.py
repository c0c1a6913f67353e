"""The default node id, importable without loading the profile machinery (fast CLI start)."""

DEFAULT_HW = "rtx-pro-6000-server"
