users = [get_user(i) for i in [3, 1, 2]]
pairs = sorted(((u["name"], len(u["tags"])) for u in users), key=lambda p: (-p[1], p[0]))
pairs
