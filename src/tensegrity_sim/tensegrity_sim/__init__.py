"""The tensegrity simulator node: the engine in real time, publishing states and RViz markers."""
