"""The wire side of the server: the ASGI gate (authentication, size, protocol hygiene),
codecs and error frames, exception -> Connect error mapping, connection guards, the
HTTP/2 listener, the UI's static files with their headers."""
