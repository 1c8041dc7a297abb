package projections

import (
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

const spSkills = "skills" // actor ‖ 0 ‖ skill name → events.LoadedSkill

// applySkillsLoaded keeps, per actor, the skill set it last loaded.
func applySkillsLoaded(tx *boltstore.Tx, r ledger.Record) error {
	var p events.SkillsLoaded
	if err := decode(r, &p); err != nil {
		return err
	}
	sp, err := tx.Space(spSkills)
	if err != nil {
		return err
	}
	prefix := append([]byte(r.Actor), 0)
	var old [][]byte
	sp.Scan(prefix, false, func(k, _ []byte) (bool, error) {
		old = append(old, append([]byte(nil), k...))
		return true, nil
	})
	for _, k := range old {
		if err := sp.Delete(k); err != nil {
			return err
		}
	}
	for _, sk := range p.Skills {
		if err := putRecord(sp, append(append([]byte(nil), prefix...), sk.Name...), &sk); err != nil {
			return err
		}
	}
	return nil
}
