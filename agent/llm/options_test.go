package llm

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func envFunc(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestOptionsFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    Options
		wantErr error
		errHas  []string
	}{
		{
			name:    "missing key",
			env:     map[string]string{},
			wantErr: ErrMissingAPIKey,
			errHas:  []string{"OPENAI_API_KEY", "OPENAI_BASE_URL"},
		},
		{
			name:    "missing key for explicit openai url",
			env:     map[string]string{"OPENAI_BASE_URL": "https://api.openai.com/v1"},
			wantErr: ErrMissingAPIKey,
			errHas:  []string{"OPENAI_API_KEY"},
		},
		{
			name:    "missing key for azure",
			env:     map[string]string{"OPENAI_BASE_URL": "https://acme.openai.azure.com", "DEEPRESEARCH_MODEL": "gpt-4o"},
			wantErr: ErrMissingAPIKey,
		},
		{
			name: "openai defaults",
			env:  map[string]string{"OPENAI_API_KEY": "sk-x"},
			want: Options{APIKey: "sk-x", Model: "gpt-4o-mini"},
		},
		{
			name: "ollama without key",
			env:  map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1", "DEEPRESEARCH_MODEL": "qwen3"},
			want: Options{BaseURL: "http://localhost:11434/v1", Model: "qwen3"},
		},
		{
			name: "custom server without a model leaves it to PickModel",
			env:  map[string]string{"OPENAI_BASE_URL": "http://gpu:8000/v1"},
			want: Options{BaseURL: "http://gpu:8000/v1"},
		},
		{
			name: "everything",
			env: map[string]string{
				"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "https://acme.openai.azure.com", "OPENAI_API_VERSION": "2024-06-01",
				"DEEPRESEARCH_MODEL": "gpt-4o", "DEEPRESEARCH_MODEL_WRITER": "gpt-4.1", "DEEPRESEARCH_MODEL_PLANNER": " o3-mini ",
				"DEEPRESEARCH_AZURE_DEPLOYMENTS": "gpt-4o=prod4o, gpt-4.1=w",
				"DEEPRESEARCH_LLM_PRICES":        "gpt-4o=2.5/10,gpt-4.1=2/8",
				"DEEPRESEARCH_LLM_MAX_RETRIES":   "0", "DEEPRESEARCH_LLM_TIMEOUT": "90s", "DEEPRESEARCH_LLM_JSON_MODE": "json_object",
				"DEEPRESEARCH_LLM_FIRST_TOKEN_TIMEOUT": "20s", "DEEPRESEARCH_LLM_IDLE_TIMEOUT": "5s",
			},
			want: Options{
				APIKey: "k", BaseURL: "https://acme.openai.azure.com", AzureAPIVersion: "2024-06-01", Model: "gpt-4o",
				RoleModels:       map[Role]string{RoleWriter: "gpt-4.1", RolePlanner: "o3-mini"},
				AzureDeployments: map[string]string{"gpt-4o": "prod4o", "gpt-4.1": "w"},
				Prices:           map[string]Price{"gpt-4o": {2.5, 10}, "gpt-4.1": {2, 8}},
				MaxRetries:       -1, Timeout: 90 * time.Second, JSONMode: JSONModeObject,
				FirstTokenTimeout: 20 * time.Second, IdleTimeout: 5 * time.Second,
			},
		},
		{name: "bad prices", env: map[string]string{"OPENAI_API_KEY": "k", "DEEPRESEARCH_LLM_PRICES": "gpt-4o=cheap"}, wantErr: ErrConfig, errHas: []string{"DEEPRESEARCH_LLM_PRICES"}},
		{name: "bad timeout", env: map[string]string{"OPENAI_API_KEY": "k", "DEEPRESEARCH_LLM_TIMEOUT": "soon"}, wantErr: ErrConfig, errHas: []string{"DEEPRESEARCH_LLM_TIMEOUT"}},
		{name: "bad idle timeout", env: map[string]string{"OPENAI_API_KEY": "k", "DEEPRESEARCH_LLM_IDLE_TIMEOUT": "0s"}, wantErr: ErrConfig, errHas: []string{"DEEPRESEARCH_LLM_IDLE_TIMEOUT"}},
		{name: "bad url", env: map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "localhost:11434"}, wantErr: ErrConfig, errHas: []string{"OPENAI_BASE_URL"}},
		{name: "bad provider", env: map[string]string{"OPENAI_API_KEY": "k", "DEEPRESEARCH_LLM_PROVIDER": "bard"}, wantErr: ErrConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OptionsFromEnv(envFunc(tt.env))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				for _, s := range tt.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not name %s", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestPriceLookup(t *testing.T) {
	prices := map[string]Price{"gpt-4o": {1, 1}, "gpt-4o-mini": {2, 2}}
	for model, want := range map[string]float64{"gpt-4o": 1, "gpt-4o-2024-08-06": 1, "gpt-4o-mini-2024-07-18": 2, "llama": 0} {
		p, _ := priceFor(prices, model)
		if p.Prompt != want {
			t.Errorf("%s: %v", model, p)
		}
	}
	if got := (Price{Prompt: 2.5, Completion: 10}).Cost(1_000_000, 100_000); got != 3.5 {
		t.Errorf("cost = %v", got)
	}
}
