package discovery

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// cannedRunner answers every command with out, or fails with err.
type cannedRunner struct {
	out   string
	err   error
	lines []string
}

func (r *cannedRunner) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	r.lines = append(r.lines, CommandLine(name, args...))
	return []byte(r.out), r.err
}

func parseNumber(source string, data []byte) (int, error) {
	n, err := strconv.Atoi(string(data))
	if err != nil {
		return 0, &ParseError{Source: source, Line: 1, Text: string(data), Msg: "not a number"}
	}
	return n, nil
}

func TestQueryRunsTheToolAndParsesItsOutput(t *testing.T) {
	r := &cannedRunner{out: "42"}
	n, err := Query(context.Background(), r, "counting chips", parseNumber, "tool", "count", "-a")
	require.NoError(t, err)
	require.Equal(t, 42, n)
	require.Equal(t, []string{"tool count -a"}, r.lines)
}

func TestQuerySaysWhatItWasForWhenTheToolFails(t *testing.T) {
	boom := errors.New("running tool count: exit status 1")
	n, err := Query(context.Background(), &cannedRunner{out: "42", err: boom}, "counting chips", parseNumber, "tool", "count")
	require.ErrorIs(t, err, boom)
	require.EqualError(t, err, "counting chips: running tool count: exit status 1")
	require.Zero(t, n)
}

func TestQueryNamesTheCommandLineInParseErrors(t *testing.T) {
	n, err := Query(context.Background(), &cannedRunner{out: "many"}, "counting chips", parseNumber, "tool", "count", "-a")
	var perr *ParseError
	require.True(t, errors.As(err, &perr), "%v", err)
	require.Equal(t, "tool count -a", perr.Source)
	require.EqualError(t, err, `counting chips: parsing tool count -a: line 1: not a number: "many"`)
	require.Zero(t, n)
}
