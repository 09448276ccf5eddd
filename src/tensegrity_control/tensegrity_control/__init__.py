"""Controller nodes of the tensegrity suite: rolling locomotion and plate pose control."""
