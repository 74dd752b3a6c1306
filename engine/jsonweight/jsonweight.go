// Package jsonweight estimates, from JSON text and as it is read, how much
// the value it decodes to will hold, in the units lang.SizeOf counts a
// node's output in: so that a reply is refused before it is decoded, not
// after. A reply's bytes are bounded while it is read, but decoding
// multiplies them: a megabyte of "{}," decodes to 340,000 maps, about 22 MB
// by SizeOf and more on the heap, and sixteen such replies at once ended
// the process out of memory before any output cap could look at them.
package jsonweight

// The weights of lang.SizeOf: what a decoded value holds beside its text.
const (
	objectWeight = 48
	arrayWeight  = 24
	scalarWeight = 8  // a number, true, false or null
	stringWeight = 16 // beside its bytes
	slotWeight   = 16 // an array element's slot, or a member's beside its key
)

// A Meter weighs JSON text written to it in pieces. It never fails: text
// that is not JSON is weighed as far as it looks like it, and the decoder
// says what is wrong with it. The zero value is ready to use.
type Meter struct {
	n      int64
	values int64
	// stack holds the open containers: '{' or '['.
	stack []byte
	// key is set in an object where a member's key is next.
	key      bool
	inString bool
	escaped  bool
	inScalar bool
}

// Weight returns the weight of what was written so far.
func (m *Meter) Weight() int64 { return m.n }

// Values returns how many JSON values (objects, arrays, strings, scalars;
// not member names) were begun in what was written so far.
func (m *Meter) Values() int64 { return m.values }

// Write weighs p, the next piece of the text. It always returns len(p), nil.
func (m *Meter) Write(p []byte) (int, error) {
	for i := 0; i < len(p); i++ {
		c := p[i]
		if m.inString {
			switch {
			case m.escaped:
				m.escaped = false
			case c == '\\':
				m.escaped = true
			case c == '"':
				m.inString = false
				continue
			}
			// Escapes count as their text: never less than what they
			// decode to.
			m.n++
			continue
		}
		if m.inScalar {
			switch c {
			case ',', ']', '}', ':', ' ', '\t', '\r', '\n':
				m.inScalar = false
			default:
				continue
			}
		}
		switch c {
		case ' ', '\t', '\r', '\n':
		case '{':
			m.value()
			m.n += objectWeight
			m.stack = append(m.stack, '{')
			m.key = true
		case '[':
			m.value()
			m.n += arrayWeight
			m.stack = append(m.stack, '[')
		case '}', ']':
			if len(m.stack) > 0 {
				m.stack = m.stack[:len(m.stack)-1]
			}
			m.key = false
		case ',':
			m.key = m.top() == '{'
		case ':':
			m.key = false
		case '"':
			if m.key {
				m.n += slotWeight // the member's, beside its key's bytes
				m.key = false
			} else {
				m.value()
				m.n += stringWeight
			}
			m.inString = true
		default:
			m.value()
			m.n += scalarWeight
			m.inScalar = true
		}
	}
	return len(p), nil
}

// value counts a value about to start, and its slot in an array.
func (m *Meter) value() {
	m.values++
	if m.top() == '[' {
		m.n += slotWeight
	}
}

func (m *Meter) top() byte {
	if len(m.stack) == 0 {
		return 0
	}
	return m.stack[len(m.stack)-1]
}

// Of returns the weight of one whole text.
func Of(b []byte) int64 {
	var m Meter
	_, _ = m.Write(b)
	return m.n
}
