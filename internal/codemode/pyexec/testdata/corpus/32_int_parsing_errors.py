raw = ["12", "x", "7.5", "40"]
out = []
for r in raw:
    try:
        out.append(int(r))
    except ValueError:
        try:
            out.append(float(r))
        except ValueError:
            out.append(None)
out
