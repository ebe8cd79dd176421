u = get_user(3)
try:
    assert u["active"], f"{u['name']} is inactive"
    status = "ok"
except AssertionError as e:
    status = str(e)
status
