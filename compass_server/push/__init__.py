"""Web Push (docs/answering/push.md): the worker that pushes asks to people's devices
(`sender.py`, a notifier beside `webhooks/`), the VAPID key it signs with (`keys.py`), and the
front door a notification's button answers through (`answer.py`, POST /push/answer)."""
