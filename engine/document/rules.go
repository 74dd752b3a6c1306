package document

// The state of the check (check.go): its locations, its failures
// worded as the JSON Schema validator words them, and the near-miss bounds.

// schemaLeaf is one failed rule: where, what, and the members a missing or
// unknown member rule names (reported at the object, covering the member).
// The document's check also says which members were missing, and which
// unknown ones are near misses of known ones: reportLeaves words them
// into a "did you mean" after the validator's message.
type schemaLeaf struct {
	loc     string
	msg     string
	members []string
	missing bool       // members are required ones absent
	near    []nearMiss // for unknown members
}

// nearMiss is an unknown member and the known one it is a plausible typo
// of.
type nearMiss struct{ got, want string }

// docSeg is one step of the location being checked: a member name or,
// when key is empty and idx >= 0, an array index.
type docSeg struct {
	key string
	idx int
}

// docChecker walks a document, collecting leaves. While quiet > 0 (trying
// the alternatives of an anyOf) it only counts failures, building nothing.
type docChecker struct {
	base   string
	withs  Withs // each node type's with
	stack  []docSeg
	leaves []schemaLeaf
	quiet  int
	fails  int
	// nearPlaces counts the objects nearMisses looked at.
	nearPlaces int
}

// Bounds of the near-miss search, which runs only on the way to a 400,
// but over a document an author wrote: the unknown members of one object
// looked at, and the objects looked at in a document.
const (
	maxNearMissMembers = 8
	maxNearMissPlaces  = 64
)
