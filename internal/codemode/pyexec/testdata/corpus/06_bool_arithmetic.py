users = [get_user(i) for i in (1, 2, 3)]
active = sum(u["active"] for u in users)
{"active": active, "ratio": active / len(users), "int_div": 7 // 2, "mod": -7 % 3, "neg_floor": -7 // 2}
