import hashlib
emails = sorted({get_user(i)["email"].lower() for i in (1, 2, 3)})
[hashlib.sha256(e.encode()).hexdigest()[:8] for e in emails]
