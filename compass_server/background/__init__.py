"""Jobs the server runs beside its requests."""
