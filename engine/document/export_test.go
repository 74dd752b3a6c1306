package document

import "sort"

// What schema_diff_test.go, an external test (it takes the node types'
// withs from package engine, which imports this one), needs of the
// checker's internals.

// Outcome is what a schema check reports: details and covered paths.
type Outcome struct {
	Details []string
	Covered []string
}

func dsReport(leaves []schemaLeaf) Outcome {
	// The library has no "did you mean": the checks' near misses are
	// left out of the comparison (TestDocNearMisses holds them).
	for i := range leaves {
		leaves[i].near = nil
	}
	d := &Problems{}
	reportLeaves(leaves, d)
	var o Outcome
	for _, det := range d.inv.Details {
		o.Details = append(o.Details, det.Path+": "+det.Message)
	}
	for p := range d.covered {
		o.Covered = append(o.Covered, p)
	}
	sort.Strings(o.Covered)
	return o
}

// LibraryReport is the Outcome of the library's validation error err,
// located under path; ok is false when err is not a validation error.
func LibraryReport(path string, err error) (o Outcome, ok bool) {
	leaves, ok := schemaLeaves(path, err)
	if !ok {
		return o, false
	}
	return dsReport(leaves), true
}

// OwnReport is the Outcome of the checks on doc, located under path.
func OwnReport(path string, doc *Document, withs Withs) Outcome {
	return dsReport(checkDocumentSchema(path, doc, withs))
}
