package engine

// AssembleForBench builds the request a turn of role would send now, as
// benchmarks measure it.
func AssembleForBench(s *Session, role string) *LLMRequest {
	return s.peekRequest(&turn{role: role, kind: "follow_up", goal: "react_to_the_answer"})
}
