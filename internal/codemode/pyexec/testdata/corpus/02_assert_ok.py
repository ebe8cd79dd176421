u = get_user(1)
assert u["active"], "user must be active"
assert "@" in u["email"]
u["name"].split()[-1]
