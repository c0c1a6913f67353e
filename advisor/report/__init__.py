"""Output sinks: rich tables for people, JSON documents, matplotlib figures."""
