package profile

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
)

// hllPrecision gives 2^14 registers (16 KiB) and about 0.8% standard error.
const hllPrecision = 14

// hll is a HyperLogLog distinct counter over 64-bit hashes (xxhash, so
// that estimates are the same on every run).
type hll struct {
	reg [1 << hllPrecision]uint8
}

func newHLL() *hll { return &hll{} }

func (h *hll) add(x uint64) {
	i := x >> (64 - hllPrecision)
	w := x<<hllPrecision | 1<<(hllPrecision-1)
	if r := uint8(bits.LeadingZeros64(w) + 1); r > h.reg[i] {
		h.reg[i] = r
	}
}

// estimate is Ertl's improved raw estimator ("New cardinality estimation
// algorithms for HyperLogLog sketches", 2017): no bias tables and no
// switch-over between linear counting and the raw estimate, unbiased
// across the whole range.
func (h *hll) estimate() float64 {
	const (
		m = 1 << hllPrecision
		q = 64 - hllPrecision
	)
	var c [q + 2]int
	for _, r := range h.reg {
		c[r]++
	}
	z := m * ertlTau(1-float64(c[q+1])/m)
	for k := q; k >= 1; k-- {
		z = 0.5 * (z + float64(c[k]))
	}
	z += m * ertlSigma(float64(c[0])/m)
	return m * m / (2 * math.Ln2) / z
}

func ertlSigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		prev := z
		z += x * y
		y += y
		if z == prev {
			return z
		}
	}
}

func ertlTau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		prev := z
		y *= 0.5
		z -= (1 - x) * (1 - x) * y
		if z == prev {
			return z / 3
		}
	}
}

// rowReservoir keeps a uniform random sample of k rows from a stream
// (Li's algorithm L: the random number generator is drawn O(k log(n/k))
// times, not once per row). Seeded, so the same file gives the same rows.
type rowReservoir struct {
	k    int
	rng  *rand.Rand
	rows [][]string
	nums []int // 0-based row numbers
	w    float64
	next int
}

func newRowReservoir(k int, seed uint64) *rowReservoir {
	return &rowReservoir{k: k, rng: rand.New(rand.NewPCG(seed, 0x5eed_0f_20_77))}
}

// want reports whether row i (rows are offered in order from 0) goes into
// the sample; if it does, the caller hands a copy to put.
func (r *rowReservoir) want(i int) bool {
	return r.k > 0 && (i < r.k || i == r.next)
}

func (r *rowReservoir) put(i int, row []string) {
	if i < r.k {
		r.rows = append(r.rows, row)
		r.nums = append(r.nums, i)
		if len(r.rows) == r.k {
			r.w = math.Exp(math.Log(r.unit()) / float64(r.k))
			r.advance(i)
		}
		return
	}
	j := r.rng.IntN(r.k)
	r.rows[j], r.nums[j] = row, i
	r.w *= math.Exp(math.Log(r.unit()) / float64(r.k))
	r.advance(i)
}

func (r *rowReservoir) advance(i int) {
	skip := math.Floor(math.Log(r.unit()) / math.Log1p(-r.w))
	if skip > float64(math.MaxInt32) || math.IsNaN(skip) {
		r.next = math.MaxInt
		return
	}
	r.next = i + int(skip) + 1
}

// unit is uniform in (0, 1].
func (r *rowReservoir) unit() float64 { return 1 - r.rng.Float64() }

// sorted returns the sample in file order, with 1-based row numbers.
func (r *rowReservoir) sorted() ([][]string, []int) {
	idx := make([]int, len(r.rows))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return r.nums[a] - r.nums[b] })
	rows := make([][]string, len(idx))
	nums := make([]int, len(idx))
	for i, j := range idx {
		rows[i], nums[i] = r.rows[j], r.nums[j]+1
	}
	return rows, nums
}

// distinctAcc counts distinct values by their 64-bit hash: exactly up to
// a bound, then with HyperLogLog. It keeps the text and count of the first
// few distinct values only, which is all that top values need.
type distinctAcc struct {
	exact  map[uint64]int32 // value hash -> index into counts
	counts []int
	values []string // the first topValuesMaxDistinct+1 distinct values
	limit  int      // keys kept exactly
	hll    *hll
	// recent is a direct-mapped cache in front of exact: low-cardinality
	// columns, the common case, then skip the map lookup.
	recent *[distinctCacheSize]struct {
		h uint64
		i int32
	}
}

const distinctCacheSize = 256

func (d *distinctAcc) add(h uint64, s string) {
	if d.exact != nil {
		if d.recent == nil {
			d.recent = new([distinctCacheSize]struct {
				h uint64
				i int32
			})
		}
		slot := &d.recent[h%distinctCacheSize]
		if slot.h == h && slot.i > 0 {
			d.counts[slot.i-1]++
			return
		}
		if i, ok := d.exact[h]; ok {
			d.counts[i]++
			slot.h, slot.i = h, i+1
			return
		}
		if len(d.exact) < d.limit {
			d.exact[h] = int32(len(d.counts))
			d.counts = append(d.counts, 1)
			if len(d.values) <= topValuesMaxDistinct {
				// Clone: s may be a slice of a whole CSV record.
				d.values = append(d.values, strings.Clone(truncateRunes(s, 4*topValueRunes)))
			}
			return
		}
		d.hll = newHLL()
		for k := range d.exact {
			d.hll.add(k)
		}
		d.exact, d.counts, d.values, d.recent = nil, nil, nil, nil
	}
	d.hll.add(h)
}

func (d *distinctAcc) count() (n int, exact bool) {
	if d.exact != nil {
		return len(d.exact), true
	}
	return int(d.hll.estimate() + 0.5), false
}

// top returns the most frequent values, most frequent first, ties by value.
func (d *distinctAcc) top(n int) []ValueCount {
	if d.exact == nil || len(d.values) < len(d.counts) {
		return nil
	}
	out := make([]ValueCount, len(d.values))
	for i, v := range d.values {
		out[i] = ValueCount{Value: v, Count: d.counts[i]}
	}
	slices.SortFunc(out, func(a, b ValueCount) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Value, b.Value)
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}
