package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"

	"deepresearch/agent"
	"deepresearch/agent/llm"
	"deepresearch/research"
	"deepresearch/storage"
	"deepresearch/tools/fetch"
	"deepresearch/tools/mcpsource"
	"deepresearch/tools/pdf"
	"deepresearch/tools/sandbox"
	"deepresearch/tools/search"
	"deepresearch/tools/search/docs"
)

// openDB opens the database (checkpoints, research notes, bot records).
type openDB func(ctx context.Context, c storage.Config) (*storage.DB, error)

// depHooks lets a command follow the model client as it works.
type depHooks struct {
	// notice is the client's OnNotice (slow answers, retries, failures).
	notice func(llm.Notice)
	// note receives one-line remarks for the operator (the model chosen
	// because DEEPRESEARCH_MODEL is unset).
	note func(string)
}

// agentDeps builds the agent's collaborators of cfg: the LLM
// client (OPENAI_API_KEY, ...), the search providers, the page fetcher, the
// coding sandbox, and the checkpoint and research-notes stores of the
// database opened by open. ask and serve
// share it. Every error names the variable to set or fix; closeAll releases
// what was opened.
//
// PDFs are read with tools/pdf: fetched ones through fetch.Options.ExtractPDF,
// those in DEEPRESEARCH_DOCS_DIR through a docs converter. When
// DEEPRESEARCH_MODEL is unset on a server other than OpenAI, the server's
// only model is used (and hooks.note says so); the returned client is the
// one in Deps, for Check.
func agentDeps(ctx context.Context, cfg config, logger *slog.Logger, open openDB, hooks depHooks) (agent.Deps, *llm.Client, func(), error) {
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	fail := func(err error) (agent.Deps, *llm.Client, func(), error) {
		closeAll()
		return agent.Deps{}, nil, nil, err
	}
	if err := cfg.Model.check(); err != nil {
		return fail(err) // names the variable to set
	}
	lo := cfg.LLM
	lo.Logger = logger
	lo.OnNotice = hooks.notice
	lo, picked, err := llm.PickModel(ctx, lo)
	if err != nil {
		return fail(err)
	}
	client, err := llm.New(lo)
	if err != nil {
		return fail(err)
	}
	if picked && hooks.note != nil {
		hooks.note(fmt.Sprintf("using model %s, the only one %s serves (set %s to choose)", lo.Model, client.BaseURL(), envModel))
	}
	pdfs := pdf.New(pdf.Options{Logger: logger})
	searcher, err := askSearch(ctx, cfg.Search, logger, pdfs)
	if err != nil {
		return fail(err)
	}
	f, err := fetch.New(fetch.Options{Allow: cfg.FetchAllow, UserAgent: "deepresearch/" + version, Logger: logger,
		TruncateOversize: true, ExtractPDF: pdfs.ExtractText})
	if err != nil {
		return fail(fmt.Errorf("%s: %w", envFetchAllow, err))
	}
	closers = append(closers, func() { f.Close() })
	db, err := open(ctx, cfg.Storage)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, func() {
		if err := db.Close(); err != nil {
			logger.Warn("closing the database", "err", err)
		}
	})
	d := agent.Deps{LLM: client, Search: searcher, Fetch: agent.NewPageFetcher(f), Saver: db.Saver(), Notes: db.Notes(), Logger: logger,
		Reports: research.ReportSource{Store: db.Reports()}}
	// The coding action runs in a child process of this binary (Linux), in
	// process elsewhere.
	so := sandbox.Options{Logger: logger}
	if exe, err := os.Executable(); err == nil && runtime.GOOS == "linux" && !strings.HasSuffix(exe, ".test") {
		so.Exec = exe
	}
	if r, err := sandbox.New(so); err == nil {
		d.Coder = r
	}
	if src := mcpSources(ctx, cfg.MCPConfig, logger); src != nil {
		closers = append(closers, func() {
			if err := src.Close(); err != nil {
				logger.Warn("closing the MCP servers", "err", err)
			}
		})
		d.Tools = src
	}
	return d, client, closeAll, nil
}

// mcpSources starts the MCP servers of the file at path
// (DEEPRESEARCH_MCP_CONFIG); nil when there is none. An unreadable file,
// and each server that cannot be reached, is named in one line: the rest
// still serve (a server that fails is tried again on use).
func mcpSources(ctx context.Context, path string, logger *slog.Logger) *mcpsource.Source {
	if path == "" {
		return nil
	}
	mc, err := mcpsource.LoadConfig(path)
	if err != nil {
		logger.Error(envMCPConfig+": no MCP sources", "err", err)
		return nil
	}
	if len(mc) == 0 {
		return nil
	}
	src := mcpsource.New(mc, mcpsource.Options{Logger: logger})
	for _, err := range src.Start(ctx) {
		logger.Warn(envMCPConfig+": "+err.Error(), "servers", strings.Join(src.Names(), ","))
	}
	return src
}

// askSearch builds the search providers: Tavily, SearXNG and the folder of
// internal documents (PDFs read by pdfs), whichever are configured.
func askSearch(ctx context.Context, cfg Search, logger *slog.Logger, pdfs *pdf.Extractor) (agent.Searcher, error) {
	var members []search.Member
	if key := cfg.TavilyAPIKey; key != "" {
		t, err := search.NewTavily(search.TavilyOptions{APIKey: key, BaseURL: cfg.TavilyBaseURL, Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("TAVILY_API_KEY/TAVILY_BASE_URL: %w", err)
		}
		members = append(members, search.Member{Provider: t})
	}
	if u := cfg.SearXNGURL; u != "" {
		s, err := search.NewSearXNG(search.SearXNGOptions{BaseURL: u, Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("SEARXNG_URL: %w", err)
		}
		members = append(members, search.Member{Provider: s})
	}
	if dir := cfg.DocsDir; dir != "" {
		ix, err := docs.New(ctx, docs.Options{Root: dir, Logger: logger, Converters: map[string]docs.ConvertFunc{".pdf": pdfs.Convert}})
		if err != nil {
			return nil, fmt.Errorf("DEEPRESEARCH_DOCS_DIR: %w", err)
		}
		members = append(members, search.Member{Provider: ix, Weight: 1.5})
	}
	switch len(members) {
	case 0:
		return nil, errors.New("no search provider: set TAVILY_API_KEY, SEARXNG_URL or DEEPRESEARCH_DOCS_DIR")
	case 1:
		return members[0].Provider, nil
	}
	m, err := search.NewMulti(search.MultiOptions{Members: members, Logger: logger})
	if err != nil {
		return nil, err
	}
	return m, nil
}
