import textwrap
text = get_text("lorem")
lines = textwrap.wrap(text, width=30)
{"lines": len(lines), "first": lines[0], "words": len(text.split())}
