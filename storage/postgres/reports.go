package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"deepresearch/research"
	"deepresearch/storage/dbtext"
)

// Reports is research.ReportStore on the past_reports table, searched
// through the 'simple' text search of its terms column (GIN-indexed).
type Reports struct{ s *Store }

// NewReports returns the store of finished reports on s's database.
func NewReports(s *Store) *Reports { return &Reports{s: s} }

// SaveReport implements research.ReportStore.
func (rs *Reports) SaveReport(ctx context.Context, r research.PastReport) error {
	for _, p := range []*string{&r.RunID, &r.Team, &r.Channel, &r.ThreadTS, &r.Requester, &r.URL, &r.Title, &r.Question, &r.Text} {
		*p = dbtext.String(*p)
	}
	terms := research.IndexTerms(r)
	_, err := rs.s.pool.Exec(ctx, `INSERT INTO past_reports (run_id, team, channel, thread_ts, private, requester, url, title, question, body, terms, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (run_id) DO UPDATE SET team = excluded.team, channel = excluded.channel, thread_ts = excluded.thread_ts,
			private = excluded.private, requester = excluded.requester, url = excluded.url, title = excluded.title,
			question = excluded.question, body = excluded.body, terms = excluded.terms, created_at = excluded.created_at`,
		r.RunID, r.Team, r.Channel, r.ThreadTS, r.Private, r.Requester, r.URL, r.Title, r.Question, r.Text, terms, nanos(r.CreatedAt))
	if err != nil {
		return fmt.Errorf("postgres: save report %s: %w", r.RunID, err)
	}
	return nil
}

// SearchReports implements research.ReportStore: the reports q's audience
// may see (research.ReportQuery), ranked by ts_rank.
func (rs *Reports) SearchReports(ctx context.Context, q research.ReportQuery) ([]research.PastReport, error) {
	terms := research.QueryTerms(q.Text, 32)
	if len(terms) == 0 {
		return nil, nil
	}
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = "'" + strings.ReplaceAll(t, "'", "''") + "'"
	}
	where, who := `NOT p.private AND p.channel = $3 AND p.channel <> ''`, q.Channel
	if q.Private {
		where, who = `p.private AND p.requester = $3 AND p.requester <> ''`, q.Requester
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 5
	}
	rows, err := rs.s.pool.Query(ctx, `SELECT p.run_id, p.team, p.channel, p.thread_ts, p.private, p.requester, p.url, p.title, p.question, p.body, p.created_at
		FROM past_reports p, to_tsquery('simple', $1) query
		WHERE to_tsvector('simple', p.terms) @@ query AND p.team = $2 AND `+where+`
		ORDER BY ts_rank(to_tsvector('simple', p.terms), query) DESC, p.created_at DESC LIMIT $4`,
		strings.Join(quoted, " | "), q.Team, who, min(limit, 50))
	if err != nil {
		return nil, fmt.Errorf("postgres: search reports: %w", err)
	}
	defer rows.Close()
	var out []research.PastReport
	for rows.Next() {
		var r research.PastReport
		var at int64
		if err := rows.Scan(&r.RunID, &r.Team, &r.Channel, &r.ThreadTS, &r.Private, &r.Requester, &r.URL, &r.Title, &r.Question, &r.Text, &at); err != nil {
			return nil, fmt.Errorf("postgres: search reports: %w", err)
		}
		r.CreatedAt = fromNanos(at)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: search reports: %w", err)
	}
	return out, nil
}

// PruneReports implements research.ReportStore.
func (rs *Reports) PruneReports(ctx context.Context, before time.Time) (int, error) {
	tag, err := rs.s.pool.Exec(ctx, `DELETE FROM past_reports WHERE created_at < $1`, nanos(before))
	if err != nil {
		return 0, fmt.Errorf("postgres: prune reports: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
