import json
u = get_user(2)
s = json.dumps(u, sort_keys=True)
json.loads(s)["tags"]
