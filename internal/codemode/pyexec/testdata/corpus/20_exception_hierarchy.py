def lookup(i):
    try:
        return get_user(i)["name"]
    except ToolError as e:
        raise KeyError(i) from e

found, missing = [], []
for i in [1, 4, 2]:
    try:
        found.append(lookup(i))
    except KeyError as e:
        missing.append(e.args[0])
    finally:
        pass
{"found": found, "missing": missing}
