package machine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"
)

// fill sets every exported field reachable from v, through pointers,
// slices, maps and interfaces, to random non-zero values: two elements per
// slice and map, a JSON object for raw JSON, nested JSON-like values for
// an any.
func fill(v reflect.Value, r *rand.Rand, depth int) {
	if depth > 12 {
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(r.Int63n(4e9), r.Int63n(1e9)).UTC()))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), r, depth+1)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), r, depth+1)
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			v.SetBytes([]byte(fmt.Sprintf(`{"n":%d}`, r.Intn(100))))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), r, depth+1)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(k, r, depth+1)
			fill(e, r, depth+1)
			v.SetMapIndex(k, e)
		}
	case reflect.Interface:
		v.Set(reflect.ValueOf(map[string]any{"k": []any{r.Float64(), fmt.Sprint(r.Int()), map[string]any{"b": true}}}))
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", r.Int()))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1 + r.Int63n(100))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1 + uint64(r.Int63n(100)))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(r.Float64() + 1)
	}
}

// shared reports the first place where a and b (of one type) share
// memory: a pointer, a map or a slice's backing array that a change to
// one would show in the other.
func shared(a, b reflect.Value, path string) string {
	switch a.Kind() {
	case reflect.Struct:
		for i := range a.NumField() {
			if a.Type().Field(i).IsExported() {
				if p := shared(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); p != "" {
					return p
				}
			}
		}
	case reflect.Pointer:
		if a.IsNil() {
			return ""
		}
		if a.Pointer() == b.Pointer() {
			return path
		}
		return shared(a.Elem(), b.Elem(), path)
	case reflect.Slice:
		if a.Len() == 0 {
			return ""
		}
		if a.Pointer() == b.Pointer() {
			return path
		}
		for i := range a.Len() {
			if p := shared(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	case reflect.Map:
		if a.Len() == 0 {
			return ""
		}
		if a.Pointer() == b.Pointer() {
			return path
		}
		for _, k := range a.MapKeys() {
			if p := shared(a.MapIndex(k), b.MapIndex(k), fmt.Sprintf("%s[%v]", path, k)); p != "" {
				return p
			}
		}
	case reflect.Interface:
		if !a.IsNil() {
			return shared(a.Elem(), b.Elem(), path)
		}
	}
	return ""
}

// TestCloneIsDeepAndEqual fills every field of a State at random (by
// reflection, so a field added later is covered), clones it, and checks
// that the copy encodes to the same JSON and shares no pointer, map or
// slice with the original.
func TestCloneIsDeepAndEqual(t *testing.T) {
	t.Parallel()
	for seed := range int64(20) {
		var s State
		fill(reflect.ValueOf(&s).Elem(), rand.New(rand.NewSource(seed)), 0)
		c := s.Clone()
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want, got) {
			t.Fatalf("seed %d: the clone encodes differently", seed)
		}
		if shared(reflect.ValueOf(s), reflect.ValueOf(s), "State") == "" {
			t.Fatal("the check finds nothing shared between a state and itself")
		}
		if p := shared(reflect.ValueOf(s), reflect.ValueOf(c), "State"); p != "" {
			t.Fatalf("seed %d: the clone shares %s with the original", seed, p)
		}
	}
}

// TestStepsDoNotDependOnJSON replays every recorded log twice: stepping on
// each state as Step returned it (as the coordinator's in-memory copy
// does) and on each state decoded from its JSON (as after a reload from
// the state bucket). The final states must be the same: a stored state and
// a kept one step alike.
func TestStepsDoNotDependOnJSON(t *testing.T) {
	t.Parallel()
	for name := range replayScenarios {
		var kept, reloaded State
		for _, ev := range readLog(t, "testdata/"+name+".events.jsonl") {
			kept, _ = Step(kept, ev)
			next, _ := Step(reloaded, ev)
			b, err := json.Marshal(next)
			if err != nil {
				t.Fatal(err)
			}
			reloaded = State{}
			if err := json.Unmarshal(b, &reloaded); err != nil {
				t.Fatal(err)
			}
		}
		if !equalJSON(kept, reloaded) {
			t.Errorf("%s: the kept and the reloaded state differ at the end", name)
		}
	}
}

// BenchmarkClone compares Clone with the JSON round trip it replaced, on
// the final state of the largest recorded job.
func BenchmarkClone(b *testing.B) {
	var s State
	for _, ev := range readLog(&testing.T{}, "testdata/converge.events.jsonl") {
		s, _ = Step(s, ev)
	}
	b.Run("clone", func(b *testing.B) {
		for b.Loop() {
			_ = s.Clone()
		}
	})
	b.Run("json", func(b *testing.B) {
		for b.Loop() {
			buf, _ := json.Marshal(s)
			var out State
			_ = json.Unmarshal(buf, &out)
		}
	})
}
