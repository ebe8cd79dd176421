users = [get_user(i) for i in (1, 2, 3)]
names = list(map(lambda u: u["name"].upper(), users))
active = list(filter(lambda u: u["active"], users))
{"names": names, "active_ids": [u["id"] for u in active]}
