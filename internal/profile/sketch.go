package profile

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
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

func (h *hll) estimate() float64 {
	const m = float64(1 << hllPrecision)
	sum, zeros := 0.0, 0
	for _, r := range h.reg {
		sum += math.Ldexp(1, -int(r))
		if r == 0 {
			zeros++
		}
	}
	e := 0.7213 / (1 + 1.079/m) * m * m / sum
	// Linear counting is the better estimate while registers are still
	// empty; 11500 is HLL++'s switch-over point for this precision.
	if zeros > 0 {
		if lc := m * math.Log(m/float64(zeros)); lc <= 11500 {
			return lc
		}
	}
	return e
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
