"""The application: the use cases every front door calls, and the Connect handlers."""
