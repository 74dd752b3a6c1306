package functions_test

// The deployed runner sets its GC target before anything else initialises
// (infra/gcstart, imported by main): this package's tests and benchmarks
// run at the same target, so that what they measure (time, memory bounds)
// is what runs. GOGC, when set, wins, as it does for the runner: GOGC=100
// go test -bench gives the figures at Go's default.
import _ "github.com/runnerd/lambda-runner/infra/gcstart"
