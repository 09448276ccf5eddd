"""Bringup of the tensegrity suite: launch files and configs (installed to share/), and the pip-only
``tensegrity-bringup`` entry point that starts the same nodes from the same YAML files, records MCAP and
writes plots."""
