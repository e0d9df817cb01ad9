//go:build e2e

// Copyright The accel-dra Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package framework

// AccelDRAImage is the accel-dra image the real node's containerd holds
// (imported from ImageEnv at start, under the chart's default name), for
// pods that run the CLI from it; ok is false where none was imported.
func (c *Cluster) AccelDRAImage() (name string, ok bool, err error) {
	if c.State.Image == "" {
		return "", false, nil
	}
	name, err = c.chartImage()
	return name, err == nil, err
}

// AgentEnv is what the agent of node gets in its environment besides the
// test's (SetAgentEnv).
func (c *Cluster) AgentEnv(node string) []string {
	return append([]string(nil), c.Agents[node].env...)
}
