"""Calibration room: read measurements, fit efficiency terms, report held-out error."""
