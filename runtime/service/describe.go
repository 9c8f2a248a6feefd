package service

import (
	"net/http"

	"github.com/batonhq/baton/runtime/describe"
)

// handleDescribe answers GET /v1/packs/{name}/describe with the pack's
// contract (describe.Contract): the same JSON as baton describe --format
// json. name is a pack a session could start with.
func (srv *Server) handleDescribe(w http.ResponseWriter, r *http.Request) {
	p, err := srv.packs.open(r.PathValue("name"))
	if err != nil {
		httpError(w, http.StatusNotFound, CodeBadPack, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	describe.WriteJSON(w, describe.Describe(p))
}
