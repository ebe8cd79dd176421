package bwrap

import "testing"

func TestUIDPool(t *testing.T) {
	p := &uidPool{base: 5000, count: 64}
	seen := map[uint32]bool{}
	for i := 0; i < 64; i++ {
		uid := p.get()
		if uid < 5000 || uid >= 5064 || seen[uid] {
			t.Fatalf("uid %d out of range or repeated", uid)
		}
		seen[uid] = true
	}
	for uid := range seen {
		p.put(uid)
	}
	if len(p.used) != 0 {
		t.Errorf("used = %v after put", p.used)
	}
}
