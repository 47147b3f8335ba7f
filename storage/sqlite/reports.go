package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"deepresearch/research"
	"deepresearch/storage/dbtext"
)

// Reports is research.ReportStore on the past_reports table, searched
// through the FTS5 table past_report_terms.
type Reports struct{ s *Store }

// NewReports returns the store of finished reports on s's database.
func NewReports(s *Store) *Reports { return &Reports{s: s} }

// SaveReport implements research.ReportStore.
func (rs *Reports) SaveReport(ctx context.Context, r research.PastReport) error {
	r = cleanReport(r)
	terms := research.IndexTerms(r)
	return rs.s.write(ctx, func(tx *sql.Tx) error {
		var id int64
		err := tx.QueryRowContext(ctx, `SELECT id FROM past_reports WHERE run_id = ?`, r.RunID).Scan(&id)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			err = tx.QueryRowContext(ctx, `INSERT INTO past_reports (run_id, team, channel, thread_ts, private, requester, url, title, question, body, created_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
				r.RunID, r.Team, r.Channel, r.ThreadTS, r.Private, r.Requester, r.URL, r.Title, r.Question, r.Text, nanos(r.CreatedAt)).Scan(&id)
		case err == nil:
			_, err = tx.ExecContext(ctx, `UPDATE past_reports SET team = ?, channel = ?, thread_ts = ?, private = ?, requester = ?, url = ?,
				title = ?, question = ?, body = ?, created_at = ? WHERE id = ?`,
				r.Team, r.Channel, r.ThreadTS, r.Private, r.Requester, r.URL, r.Title, r.Question, r.Text, nanos(r.CreatedAt), id)
			if err == nil {
				_, err = tx.ExecContext(ctx, `DELETE FROM past_report_terms WHERE rowid = ?`, id)
			}
		}
		if err == nil {
			_, err = tx.ExecContext(ctx, `INSERT INTO past_report_terms (rowid, terms) VALUES (?, ?)`, id, terms)
		}
		if err != nil {
			return fmt.Errorf("sqlite: save report %s: %w", r.RunID, err)
		}
		return nil
	})
}

// SearchReports implements research.ReportStore: the reports q's audience
// may see (research.ReportQuery), ranked by FTS5's bm25.
func (rs *Reports) SearchReports(ctx context.Context, q research.ReportQuery) ([]research.PastReport, error) {
	terms := research.QueryTerms(q.Text, 32)
	if len(terms) == 0 {
		return nil, nil
	}
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	where, args := reportAudience(q)
	args = append([]any{strings.Join(quoted, " OR "), q.Team}, args...)
	args = append(args, reportLimit(q))
	rows, err := rs.s.r.QueryContext(ctx, `SELECT p.run_id, p.team, p.channel, p.thread_ts, p.private, p.requester, p.url, p.title, p.question, p.body, p.created_at
		FROM past_report_terms JOIN past_reports p ON p.id = past_report_terms.rowid
		WHERE past_report_terms MATCH ? AND p.team = ? AND `+where+`
		ORDER BY bm25(past_report_terms), p.created_at DESC LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: search reports: %w", err)
	}
	defer rows.Close()
	var out []research.PastReport
	for rows.Next() {
		var r research.PastReport
		var at int64
		if err := rows.Scan(&r.RunID, &r.Team, &r.Channel, &r.ThreadTS, &r.Private, &r.Requester, &r.URL, &r.Title, &r.Question, &r.Text, &at); err != nil {
			return nil, fmt.Errorf("sqlite: search reports: %w", err)
		}
		r.CreatedAt = fromNanos(at)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: search reports: %w", err)
	}
	return out, nil
}

// PruneReports implements research.ReportStore.
func (rs *Reports) PruneReports(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := rs.s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM past_report_terms WHERE rowid IN (SELECT id FROM past_reports WHERE created_at < ?)`, nanos(before)); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM past_reports WHERE created_at < ?`, nanos(before))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: prune reports: %w", err)
	}
	return int(n), nil
}

// reportAudience is the condition (on alias p) and its arguments that keep
// the rule of research.ReportQuery (storage/postgres has the same).
func reportAudience(q research.ReportQuery) (string, []any) {
	if q.Private {
		return `p.private AND p.requester = ? AND p.requester <> ''`, []any{q.Requester}
	}
	return `NOT p.private AND p.channel = ? AND p.channel <> ''`, []any{q.Channel}
}

func reportLimit(q research.ReportQuery) int {
	if q.Limit <= 0 {
		return 5
	}
	return min(q.Limit, 50)
}

// cleanReport makes a report's text storable (dbtext).
func cleanReport(r research.PastReport) research.PastReport {
	for _, p := range []*string{&r.RunID, &r.Team, &r.Channel, &r.ThreadTS, &r.Requester, &r.URL, &r.Title, &r.Question, &r.Text} {
		*p = dbtext.String(*p)
	}
	return r
}
