package commands

import (
	"os"
	"time"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/skills"
)

// PingInput is server_ping's (empty) arguments.
type PingInput struct{}

// PingResult is server_ping's answer.
type PingResult struct {
	Timestamp string `json:"timestamp"`
}

// Ping answers with the time.
func (s *Service) Ping(tx *Tx, _ PingInput) (*PingResult, error) {
	return &PingResult{Timestamp: projections.FormatTime(time.Now())}, nil
}

// HealthInput is server_health's (empty) arguments.
type HealthInput struct{}

// HealthResult is server_health's answer.
type HealthResult struct {
	Status      string       `json:"status"`
	Mode        string       `json:"mode"`
	UptimeMS    int64        `json:"uptime_ms"`
	Version     string       `json:"version"`
	Timestamp   string       `json:"timestamp"`
	DB          HealthDB     `json:"db"`
	Ledger      HealthLedger `json:"ledger"`
	Projections HealthProj   `json:"projections"`
	Middleware  HealthStages `json:"middleware"`
	Tools       HealthTools  `json:"tools"`
	Skills      HealthSkills `json:"skills"`
}

// HealthDB describes the ledger file.
type HealthDB struct {
	Open          bool   `json:"open"`
	Path          string `json:"path"`
	FormatVersion int    `json:"format_version"`
	SizeBytes     int64  `json:"size_bytes"`
}

// HealthLedger is the log's head and root.
type HealthLedger struct {
	HeadSeq  uint64 `json:"head_seq"`
	HeadHash string `json:"head_hash"`
	Root     string `json:"root"`
}

// HealthProj is the projections' version and the last folded seq.
type HealthProj struct {
	Version    uint64 `json:"version"`
	AppliedSeq uint64 `json:"applied_seq"`
}

// HealthStages lists the middleware stages a call passes, in order: the
// transport's, which it fills in (the service has none of its own).
type HealthStages struct {
	Stages []string `json:"stages"`
}

// HealthTools counts the registered tools: the service's commands, or what
// the transport publishes, which it fills in.
type HealthTools struct {
	Registered int `json:"registered"`
}

// HealthSkills is what the skills folder gave at start-up.
type HealthSkills struct {
	Loaded  int                   `json:"loaded"`
	Skipped []events.SkippedSkill `json:"skipped"`
}

// Health reports the server, ledger and projection state. It is degraded
// when skill files were skipped. (Projections cannot lag here: the call's
// own transaction folded every event before it.)
func (s *Service) Health(tx *Tx, _ HealthInput) (*HealthResult, error) {
	head := tx.lt.Head()
	root, err := tx.lt.Root(head.Seq)
	if err != nil {
		return nil, err
	}
	version, applied, err := projections.State(tx.lt)
	if err != nil {
		return nil, err
	}
	res := &HealthResult{Status: "ok", Mode: "FULL", UptimeMS: time.Since(s.started).Milliseconds(), Version: s.opts.Version,
		Timestamp: projections.FormatTime(time.Now()),
		// The path is the one the operator gave at launch (flag or env), as given.
		DB:          HealthDB{Open: true, Path: s.l.Path(), FormatVersion: int(tx.lt.Format())},
		Ledger:      HealthLedger{HeadSeq: head.Seq, HeadHash: head.Hash.String(), Root: root.String()},
		Projections: HealthProj{Version: version, AppliedSeq: applied},
		// A transport describes its own stages and tools in its reply.
		Middleware: HealthStages{Stages: []string{}},
		Tools:      HealthTools{Registered: len(domain.Commands)},
		Skills:     HealthSkills{Loaded: len(s.opts.Skills.All()), Skipped: s.opts.Skipped},
	}
	if res.Skills.Skipped == nil {
		res.Skills.Skipped = []events.SkippedSkill{}
	}
	if fi, err := os.Stat(s.l.Path()); err == nil {
		res.DB.SizeBytes = fi.Size()
	}
	if s.opts.ReadOnly || tx.readOnly { // a read-only server, or caller
		res.Mode = "READONLY"
	}
	if len(s.opts.Skipped) > 0 {
		res.Status = "degraded"
	}
	return res, nil
}

// ListSkillsInput is skill_list's arguments.
type ListSkillsInput struct {
	Search     string `json:"search"`
	Capability string `json:"capability"`
}

// ListSkillsResult is skill_list's answer.
type ListSkillsResult struct {
	Skills     []skills.Skill `json:"skills"`
	TotalCount int            `json:"total_count"`
}

// ListSkills filters the skills loaded at start-up.
func (s *Service) ListSkills(tx *Tx, in ListSkillsInput) (*ListSkillsResult, error) {
	list := s.opts.Skills.List(in.Search, in.Capability)
	return &ListSkillsResult{Skills: list, TotalCount: len(list)}, nil
}
