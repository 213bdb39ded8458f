import assert from "node:assert/strict";
import { parseKubeconfigYaml } from "./_kubeconfig_yaml.ts";
import { fromYaml, toYaml } from "../../util/yaml.ts";

// Kubeconfigs as kubectl, kind, cloud CLIs and kubeno write them: the subset parser must read
// each exactly as the full YAML parser does.
const SAMPLES: Record<string, string> = {
  kubectl: `apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM=
    server: https://127.0.0.1:6443
  name: kind-dev
contexts:
- context:
    cluster: kind-dev
    user: kind-dev
  name: kind-dev
current-context: kind-dev
kind: Config
preferences: {}
users:
- name: kind-dev
  user:
    client-certificate-data: LS0tLS1CRUdJTiBDRVJU
    client-key-data: LS0tLS1CRUdJTiBSU0Eg
`,
  eks: `apiVersion: v1
clusters:
- cluster:
    server: https://ABC.gr7.us-west-2.eks.amazonaws.com
    certificate-authority-data: LS0t
  name: arn:aws:eks:us-west-2:123456789012:cluster/prod
contexts:
- context:
    cluster: arn:aws:eks:us-west-2:123456789012:cluster/prod
    user: arn:aws:eks:us-west-2:123456789012:cluster/prod
    namespace: "team-a"
  name: prod   # the production cluster
current-context: prod
kind: Config
preferences: {}
users:
- name: arn:aws:eks:us-west-2:123456789012:cluster/prod
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      args:
      - --region
      - us-west-2
      - eks
      - get-token
      - --cluster-name
      - prod
      command: aws
      env:
      - name: AWS_PROFILE
        value: 'prod'
      interactiveMode: IfAvailable
      provideClusterInfo: false
`,
  gke: `---
apiVersion: v1
kind: Config
clusters:
  - name: gke_proj_us-central1_c
    cluster:
      server: https://34.1.2.3
      insecure-skip-tls-verify: true
      tls-server-name: "kubernetes.default"
      proxy-url: http://proxy.example:3128
users:
  - name: gke_proj_us-central1_c
    user:
      exec:
        apiVersion: client.authentication.k8s.io/v1beta1
        command: gke-gcloud-auth-plugin
        installHint: "Install gke-gcloud-auth-plugin for use with kubectl by following\\n  https://cloud.google.com/blog"
        provideClusterInfo: true
        env: null
        args: []
contexts:
  - name: gke
    context: {cluster: gke_proj_us-central1_c, user: gke_proj_us-central1_c}
current-context: gke
`,
  flow: `apiVersion: v1
kind: Config
clusters:
- { name: a, cluster: { server: "https://a.example:6443" } }
- { name: b, cluster: { server: "https://b.example", "insecure-skip-tls-verify": false } }
users:
- { name: tok, user: { token: t-a } }
- { name: basic, user: { username: ann, password: "p:w" } }
- name: quoted
  user: { token: "a \\"quoted\\" \\u00e9 token", as-groups: [a, 'b c', "d"] }
contexts:
- { name: ctx-a, context: { cluster: a, user: tok, namespace: apps } }
current-context: ctx-a
`,
  scalars: `a: 1
b: -2.5
c: 0x1F
d: 0o17
e: ~
f: Null
g: 'it''s'
h: "tab\\there"
i: TRUE
j: 1e3
k: .inf
l: plain text with spaces # and a comment
m: "# not a comment"
n: x#y
`,
  nested: `outer:
  list:
  - a
  -
    b: 1
  - - x
    - y
  empty:
  map:
    k: v
`,
};

Deno.test("the kubeconfig YAML subset reads common kubeconfigs as the full parser does", () => {
  for (const [name, text] of Object.entries(SAMPLES)) {
    const lite = parseKubeconfigYaml(text);
    assert.notEqual(lite, undefined, `${name}: the subset parser gave up`);
    assert.deepEqual(lite, fromYaml(text)[0], name);
  }
  // What kubeno's own tools write.
  const written = toYaml([{
    apiVersion: "v1",
    kind: "Config",
    clusters: [{
      name: "c",
      cluster: { server: "https://127.0.0.1:1", "certificate-authority-data": "QQ==" },
    }],
    users: [{ name: "u", user: { token: "s3cret: with colon", tokenFile: "/var/run/token" } }],
    contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
    "current-context": "x",
  }]);
  assert.deepEqual(parseKubeconfigYaml(written), fromYaml(written)[0]);
  assert.equal(parseKubeconfigYaml("# nothing\n\n"), null);
});

Deno.test("the kubeconfig YAML subset leaves everything else to the full parser", () => {
  const others = [
    "a: |\n  block\n",
    "a: &anchor x\nb: *anchor\n",
    "a: !!str 1\n",
    "a: 1\n---\nb: 2\n",
    "a: multi\n  line plain\n",
    'a: "multi\n  line"\n',
    "a: [1,\n  2]\n",
    "a: 1\na: 2\n",
    "a:\n\t- x\n",
    "? complex\n: key\n",
    "1: numeric key\n",
    "a: b: c\n",
    "clusters: [ {name: x\n  cluster: {\n",
  ];
  for (const text of others) assert.equal(parseKubeconfigYaml(text), undefined, text);
});
