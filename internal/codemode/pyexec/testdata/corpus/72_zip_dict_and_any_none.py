keys = ["a", "b", "c"]
vals = [get_user(1)["id"], None, 3]
d = dict(zip(keys, vals))
{"d": d, "has_none": any(v is None for v in d.values()), "filtered": {k: v for k, v in d.items() if v is not None}}
