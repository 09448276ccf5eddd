"""Live view of the tensegrity suite in the Foxglove app: scene building, the Foxglove WebSocket server,
client steering and the live_view node."""
