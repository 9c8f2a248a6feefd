package service

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/batonhq/baton/runtime/internal/wal"
)

// DataDirReport is what InspectDataDir found in a data directory.
type DataDirReport struct {
	// Redo is what opening the directory did with its journal: entries
	// applied, a torn tail cleared, damage found and kept as evidence.
	Redo wal.RedoReport
	// Live and Finished count the session logs.
	Live, Finished int
	// Damaged maps each session whose log is damaged to why: it fails
	// at every start until retired.
	Damaged map[string]string
	// Retired maps each session retired by this call to the copy kept.
	Retired map[string]string
}

// InspectDataDir opens a data directory as a starting server would (so
// the journal is redone, and its damage contained, exactly as then),
// reads every log back, retires the damaged sessions named in retire,
// and closes it. It fails while a server holds the directory.
func InspectDataDir(path string, retire []string, now time.Time) (*DataDirReport, error) {
	// Never made here: a mistyped path is an error, not an empty directory.
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("data directory %s: %w", path, cmp.Or(err, errors.New("not a directory")))
	}
	d, err := wal.OpenDir(path, wal.Options{})
	if err != nil {
		return nil, err
	}
	rep := &DataDirReport{Redo: d.Redo(), Damaged: map[string]string{}, Retired: map[string]string{}}
	for id, why := range d.Damaged() {
		rep.Damaged[id] = why
	}
	var errs []error
	for _, list := range []func() ([]string, error){d.Live, d.Finished} {
		ids, err := list()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, id := range ids {
			_, err := d.Read(id)
			var dmg *wal.DamageError
			switch {
			case errors.As(err, &dmg):
				rep.Damaged[id] = err.Error()
			case err != nil && !errors.Is(err, wal.ErrNotFound):
				errs = append(errs, err)
			}
		}
	}
	for _, id := range retire {
		evidence, err := d.Retire(id, now)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rep.Retired[id] = evidence
		delete(rep.Damaged, id)
	}
	if ids, err := d.Live(); err == nil {
		rep.Live = len(ids)
	}
	if ids, err := d.Finished(); err == nil {
		rep.Finished = len(ids)
	}
	if err := d.Close(); err != nil {
		errs = append(errs, fmt.Errorf("closing %s: %w", path, err))
	}
	return rep, errors.Join(errs...)
}
