text = get_text("lorem")
vowels = 0
for ch in text.lower():
    if ch in "aeiou":
        vowels += 1
{"vowels": vowels, "upper": sum(1 for c in text if c.isupper()), "reversed_word": text.split()[1][::-1]}
