package sqlstore

import (
	"context"
	"strings"
	"time"

	"deepresearch/research"
	"deepresearch/storage/dbtext"
)

// Reports is research.ReportStore on the past_reports table, searched on
// SQLite through the FTS5 table past_report_terms (ranked by bm25), on
// PostgreSQL through the 'simple' text search of its terms column
// (GIN-indexed, ranked by ts_rank).
type Reports struct{ db *DB }

// NewReports returns the store of finished reports on db.
func NewReports(db *DB) *Reports { return &Reports{db: db} }

// SaveReport implements research.ReportStore.
func (rs *Reports) SaveReport(ctx context.Context, r research.PastReport) error {
	for _, p := range []*string{&r.RunID, &r.Team, &r.Channel, &r.Thread, &r.Requester, &r.URL, &r.Title, &r.Question, &r.Text} {
		*p = dbtext.String(*p)
	}
	terms := research.IndexTerms(r)
	var err error
	if rs.db.engine == Postgres {
		err = rs.saveIndexed(ctx, r, terms)
	} else {
		err = rs.saveFTS(ctx, r, terms)
	}
	if err != nil {
		return rs.db.errorf("save report %s: %w", r.RunID, err)
	}
	return nil
}

// saveIndexed stores r with its terms in one upsert (PostgreSQL).
func (rs *Reports) saveIndexed(ctx context.Context, r research.PastReport, terms string) error {
	_, err := rs.db.Read().Exec(ctx, `INSERT INTO past_reports (run_id, team, channel, thread_ts, private, requester, url, title, question, body, terms, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (run_id) DO UPDATE SET team = excluded.team, channel = excluded.channel, thread_ts = excluded.thread_ts,
			private = excluded.private, requester = excluded.requester, url = excluded.url, title = excluded.title,
			question = excluded.question, body = excluded.body, terms = excluded.terms, created_at = excluded.created_at`,
		r.RunID, r.Team, r.Channel, r.Thread, r.Private, r.Requester, r.URL, r.Title, r.Question, r.Text, terms, nanos(r.CreatedAt))
	return err
}

// saveFTS stores r, and its terms in the FTS5 table under r's row id, in
// one transaction (SQLite).
func (rs *Reports) saveFTS(ctx context.Context, r research.PastReport, terms string) error {
	return rs.db.Tx(ctx, func(q Querier) error {
		var id int64
		err := q.QueryRow(ctx, `INSERT INTO past_reports (run_id, team, channel, thread_ts, private, requester, url, title, question, body, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
			ON CONFLICT (run_id) DO UPDATE SET team = excluded.team, channel = excluded.channel, thread_ts = excluded.thread_ts,
				private = excluded.private, requester = excluded.requester, url = excluded.url, title = excluded.title,
				question = excluded.question, body = excluded.body, created_at = excluded.created_at
			RETURNING id`,
			r.RunID, r.Team, r.Channel, r.Thread, r.Private, r.Requester, r.URL, r.Title, r.Question, r.Text, nanos(r.CreatedAt)).Scan(&id)
		if err != nil {
			return err
		}
		if _, err := q.Exec(ctx, `DELETE FROM past_report_terms WHERE rowid = $1`, id); err != nil {
			return err
		}
		_, err = q.Exec(ctx, `INSERT INTO past_report_terms (rowid, terms) VALUES ($1, $2)`, id, terms)
		return err
	})
}

// SearchReports implements research.ReportStore: the reports q's audience
// may see (research.ReportQuery), best match first.
func (rs *Reports) SearchReports(ctx context.Context, q research.ReportQuery) ([]research.PastReport, error) {
	terms := research.QueryTerms(q.Text, 32)
	if len(terms) == 0 {
		return nil, nil
	}
	where, who := `NOT p.private AND p.channel = $3 AND p.channel <> ''`, q.Channel
	if q.Private {
		where, who = `p.private AND p.requester = $3 AND p.requester <> ''`, q.Requester
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 5
	}
	const cols = `SELECT p.run_id, p.team, p.channel, p.thread_ts, p.private, p.requester, p.url, p.title, p.question, p.body, p.created_at`
	quote, or, query := `"`, " OR ", cols+`
		FROM past_report_terms JOIN past_reports p ON p.id = past_report_terms.rowid
		WHERE past_report_terms MATCH $1 AND p.team = $2 AND `+where+`
		ORDER BY bm25(past_report_terms), p.created_at DESC LIMIT $4`
	if rs.db.engine == Postgres {
		quote, or, query = `'`, " | ", cols+`
		FROM past_reports p, to_tsquery('simple', $1) query
		WHERE to_tsvector('simple', p.terms) @@ query AND p.team = $2 AND `+where+`
		ORDER BY ts_rank(to_tsvector('simple', p.terms), query) DESC, p.created_at DESC LIMIT $4`
	}
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = quote + strings.ReplaceAll(t, quote, quote+quote) + quote
	}
	rows, err := rs.db.Read().Query(ctx, query, strings.Join(quoted, or), q.Team, who, min(limit, 50))
	out, err := collect(rows, err, func(row Row) (research.PastReport, error) {
		var r research.PastReport
		var at int64
		err := row.Scan(&r.RunID, &r.Team, &r.Channel, &r.Thread, &r.Private, &r.Requester, &r.URL, &r.Title, &r.Question, &r.Text, &at)
		r.CreatedAt = fromNanos(at)
		return r, err
	})
	if err != nil {
		return nil, rs.db.errorf("search reports: %w", err)
	}
	return out, nil
}

// PruneReports implements research.ReportStore.
func (rs *Reports) PruneReports(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := rs.db.Tx(ctx, func(q Querier) error {
		if rs.db.engine == SQLite {
			if _, err := q.Exec(ctx, `DELETE FROM past_report_terms WHERE rowid IN (SELECT id FROM past_reports WHERE created_at < $1)`, nanos(before)); err != nil {
				return err
			}
		}
		var err error
		n, err = q.Exec(ctx, `DELETE FROM past_reports WHERE created_at < $1`, nanos(before))
		return err
	})
	if err != nil {
		return 0, rs.db.errorf("prune reports: %w", err)
	}
	return int(n), nil
}
