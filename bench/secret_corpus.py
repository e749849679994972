"""Generated secrets and look-alikes for the redaction tests and bench/redact_bench.py (no real
secret is written here).

Every value is drawn at random in its provider's published shape from a seeded generator, so
the source holds templates, not keys. A template is text with fields:

- ``{C:n}``: n random characters of class C (see ``CLASSES``), ``{uuid}``: a random UUID;
- ``«…»`` marks the secret: what must not survive redaction (the whole text when absent).

``SECRETS`` are (format, template) pairs that must be redacted, ``LOOK_ALIKES`` (name,
template) pairs that must come back unchanged, and ``STRUCTURED`` tool inputs (JSON values)
whose marked strings must be redacted by ``redact_value``.
"""

from __future__ import annotations

import random
import re
import string
from typing import Any

UPPER, LOWER, DIGITS = string.ascii_uppercase, string.ascii_lowercase, string.digits
CLASSES = {
    "A": UPPER + DIGITS,                 # upper-case letters and digits
    "a": UPPER + LOWER + DIGITS,         # letters and digits
    "l": LOWER + DIGITS,                 # lower-case letters and digits
    "L": UPPER + LOWER,                  # letters
    "h": "0123456789abcdef",             # hex
    "H": "0123456789ABCDEF",             # upper-case hex
    "d": DIGITS,
    "b": UPPER + LOWER + DIGITS + "+/",  # base64
    "u": UPPER + LOWER + DIGITS + "_-",  # base64url
    "p": UPPER + LOWER + DIGITS + "!%^*_+-",  # a typed password
    "e": "qpzry9x8gf2tvdw0s3jn54khce6mua7l".upper(),  # bech32 (age keys)
    "w": LOWER,                          # a word's letters
}
_FIELD = re.compile(r"\{(?:([A-Za-z]):(\d+)|uuid)\}")


def _draw(cls: str, n: int, rng: random.Random) -> str:
    chars = CLASSES[cls]
    while True:
        out = "".join(rng.choice(chars) for _ in range(n))
        if cls == "p":  # a password: starts with a letter, has a digit, a capital and a symbol
            out = rng.choice(LOWER) + out[1:]
            if n < 4 or (any(c.isdigit() for c in out) and any(c.isupper() for c in out)
                         and any(not c.isalnum() for c in out)):
                return out
        elif cls in "abu" and n >= 8:  # mixed classes have each kind, as real tokens do
            if any(c.isdigit() for c in out) and any(c.isupper() for c in out) \
                    and any(c.islower() for c in out):
                return out
        else:
            return out


def render(template: str, seed: int) -> tuple[str, str]:
    """(text, secret) for one draw of ``template``; the secret is the part between «»."""
    rng = random.Random(f"{template}|{seed}")

    def field(m: re.Match[str]) -> str:
        if m.group(1) is None:
            h = _draw("h", 32, rng)
            return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{rng.choice('89ab')}{h[17:20]}-{h[20:]}"
        return _draw(m.group(1), int(m.group(2)), rng)

    text = _FIELD.sub(field, template)
    if "«" in text:
        secret = text[text.index("«") + 1:text.index("»")]
        return text.replace("«", "").replace("»", ""), secret
    return text, text


PEM = ("-----BEGIN {kind}PRIVATE KEY-----\n«{{b:64}}\n{{b:64}}\n{{b:40}}==»\n"
       "-----END {kind}PRIVATE KEY-----")

# (format, template): ≥ 200 formats; each is drawn with several seeds in the tests.
SECRETS: list[tuple[str, str]] = [
    # ---- AI providers
    ("anthropic-api-key", "ANTHROPIC_KEY_VALUE «sk-ant-api03-{u:93}AA»"),
    ("anthropic-admin-key", "«sk-ant-admin01-{u:93}AA»"),
    ("openai-project-key", "client = OpenAI(api_key=\"«sk-proj-{u:48}»\")"),
    ("openai-service-account-key", "«sk-svcacct-{u:64}»"),
    ("openai-legacy-key", "the key «sk-{a:48}» stopped working"),
    ("openai-admin-key", "«sk-admin-{u:48}»"),
    ("openrouter-key", "«sk-or-v1-{h:64}»"),
    ("deepseek-key", "«sk-{h:32}»"),
    ("xai-key", "«xai-{a:80}»"),
    ("groq-key", "«gsk_{a:52}»"),
    ("perplexity-key", "«pplx-{a:48}»"),
    ("replicate-token", "«r8_{a:37}»"),
    ("huggingface-token", "huggingface-cli login --token «hf_{L:34}»"),
    ("langsmith-key", "«lsv2_pt_{h:32}_{h:10}»"),
    ("pinecone-key", "«pcsk_{a:6}_{a:63}»"),
    ("env-MISTRAL_API_KEY", "MISTRAL_API_KEY=«{a:32}»"),
    ("env-COHERE_API_KEY", "export COHERE_API_KEY=«{a:40}»"),
    ("env-WANDB_API_KEY", "WANDB_API_KEY=«{h:40}»"),
    # ---- GitHub, GitLab, Atlassian, Docker, JFrog
    ("github-pat-classic", "git push https://«ghp_{a:36}»@github.com/o/r"),
    ("github-oauth", "«gho_{a:36}»"),
    ("github-app-user", "«ghu_{a:36}»"),
    ("github-app-server", "«ghs_{a:36}»"),
    ("github-refresh", "«ghr_{a:76}»"),
    ("github-fine-grained-pat", "«github_pat_{a:22}_{a:59}»"),
    ("gitlab-pat", "«glpat-{u:20}»"),
    ("gitlab-deploy-token", "«gldt-{u:20}»"),
    ("gitlab-trigger-token", "«glptt-{h:40}»"),
    ("gitlab-runner-token", "«glrt-{u:20}»"),
    ("gitlab-ci-build-token", "«glcbt-{u:24}»"),
    ("gitlab-feed-token", "«glft-{u:20}»"),
    ("gitlab-incoming-mail-token", "«glimt-{u:25}»"),
    ("gitlab-agent-token", "«glagent-{u:50}»"),
    ("gitlab-oauth-secret", "«gloas-{h:64}»"),
    ("gitlab-scim-token", "«glsoat-{u:20}»"),
    ("gitlab-runner-registration", "«GR1348941{u:20}»"),
    ("git-clone-with-token", "git clone https://oauth2:«glpat-{u:20}»@gitlab.com/g/p.git"),
    ("bitbucket-app-password", "«ATBB{a:32}{H:8}»"),
    ("atlassian-api-token", "«ATATT3{u:180}={H:8}»"),
    ("docker-hub-pat", "«dckr_pat_{u:27}»"),
    ("jfrog-api-key", "«AKCp{a:69}»"),
    ("azure-devops-pat", "«{a:76}AZDO{a:4}»"),
    # ---- AWS, Google, Azure, Alibaba, DigitalOcean, Cloudflare, Heroku and hosting
    ("aws-access-key-id", "aws_access_key_id = «AKIA{A:16}»"),
    ("aws-temporary-key-id", "«ASIA{A:16}»"),
    ("aws-bearer-key-id", "«ABIA{A:16}»"),
    ("aws-context-key-id", "«ACCA{A:16}»"),
    ("aws-secret-access-key", "aws_secret_access_key = «{b:40}»"),
    ("env-AWS_SECRET_ACCESS_KEY", "export AWS_SECRET_ACCESS_KEY=«{b:40}»"),
    ("aws-session-token", "aws_session_token = «{b:356}»"),
    ("aws-presigned-signature", "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256"
                                "&X-Amz-Signature=«{h:64}»"),
    ("aws-presigned-security-token", "https://b.s3.amazonaws.com/k?X-Amz-Security-Token=«{b:200}»"
                                     "&X-Amz-Expires=300"),
    ("google-api-key", "https://maps.googleapis.com/maps/api/js?key=«AIza{u:35}»"),
    ("google-oauth-client-secret", "«GOCSPX-{u:28}»"),
    ("google-oauth-access-token", "«ya29.{u:120}»"),
    ("google-refresh-token-json", "{{\"refresh_token\": \"«1//0{u:60}»\"}}"),
    ("gcp-service-account-private-key",
     "{{\"type\": \"service_account\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\\n"
     "«{b:64}»\\n-----END PRIVATE KEY-----\\n\"}}"),
    ("azure-ad-client-secret", "«{a:3}8Q~{u:34}»"),
    ("azure-storage-connection-string",
     "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=«{b:86}==»;"
     "EndpointSuffix=core.windows.net"),
    ("azure-sas-signature", "https://acct.blob.core.windows.net/c/f?sv=2022-11-02&sp=r"
                            "&se=2026-12-01T00:00:00Z&sig=«{b:43}%3D»"),
    ("azure-functions-key", "x-functions-key: «{u:54}==»"),
    ("azure-openai-key-header", "api-key: «{h:32}»"),
    ("alibaba-access-key-id", "«LTAI{a:20}»"),
    ("digitalocean-pat", "«dop_v1_{h:64}»"),
    ("digitalocean-oauth", "«doo_v1_{h:64}»"),
    ("digitalocean-refresh", "«dor_v1_{h:64}»"),
    ("cloudflare-origin-ca-key", "«v1.0-{h:24}-{h:146}»"),
    ("env-CLOUDFLARE_API_TOKEN", "CLOUDFLARE_API_TOKEN=«{u:40}»"),
    ("heroku-api-key-env", "HEROKU_API_KEY=«{uuid}»"),
    ("heroku-token", "«HRKU-{u:60}»"),
    ("netlify-token", "«nfp_{a:36}»"),
    ("render-key", "«rnd_{a:32}»"),
    ("fly-token", "«fo1_{u:43}»"),
    ("vercel-token-env", "VERCEL_TOKEN=«{a:24}»"),
    ("supabase-token", "«sbp_{h:40}»"),
    ("planetscale-token", "«pscale_tkn_{u:43}»"),
    ("planetscale-password", "«pscale_pw_{u:43}»"),
    ("env-NGROK_AUTHTOKEN", "NGROK_AUTHTOKEN=«{a:48}»"),
    # ---- CI, code quality, observability
    ("circleci-token", "«CCIPAT_{a:22}_{h:40}»"),
    ("buildkite-token", "«bkua_{h:40}»"),
    ("sonarqube-project-token", "«sqp_{h:40}»"),
    ("sonarqube-user-token", "«squ_{h:40}»"),
    ("terraform-cloud-token", "«{a:14}.atlasv1.{u:67}»"),
    ("pulumi-token", "«pul-{h:40}»"),
    ("databricks-token", "«dapi{h:32}»"),
    ("doppler-personal-token", "«dp.pt.{a:43}»"),
    ("doppler-service-token", "«dp.st.{a:43}»"),
    ("dynatrace-token", "«dt0c01.{A:24}.{A:64}»"),
    ("hashicorp-vault-token", "VAULT_TOKEN=«hvs.{u:90}»"),
    ("hashicorp-vault-batch-token", "«hvb.{u:120}»"),
    ("new-relic-user-key", "«NRAK-{A:27}»"),
    ("sentry-org-token", "«sntrys_eyJ{b:120}»"),
    ("sentry-user-token", "«sntryu_{h:64}»"),
    ("grafana-cloud-token", "«glc_eyJ{b:80}»"),
    ("grafana-service-account-token", "«glsa_{a:32}_{h:8}»"),
    ("prefect-key", "«pnu_{a:36}»"),
    ("launchdarkly-api-key", "«api-{uuid}»"),
    ("launchdarkly-sdk-key", "«sdk-{uuid}»"),
    ("env-DATADOG_API_KEY", "DD_API_KEY=«{h:32}»"),
    ("env-SNYK_TOKEN", "SNYK_TOKEN=«{uuid}»"),
    # ---- chat, mail, messaging
    ("slack-bot-token", "«xoxb-{d:12}-{d:13}-{a:24}»"),
    ("slack-user-token", "«xoxp-{d:12}-{d:12}-{d:13}-{h:32}»"),
    ("slack-legacy-token", "«xoxa-2-{d:12}-{a:24}»"),
    ("slack-app-token", "«xapp-1-{A:11}-{d:13}-{h:64}»"),
    ("slack-config-token", "«xoxe.xoxp-1-{a:150}»"),
    ("slack-webhook", "«https://hooks.slack.com/services/T{A:8}/B{A:10}/{a:24}»"),
    ("slack-workflow-webhook", "«https://hooks.slack.com/workflows/T{A:8}/A{A:10}/{d:18}/{a:24}»"),
    ("discord-webhook", "«https://discord.com/api/webhooks/{d:18}/{u:68}»"),
    ("discord-bot-token-header", "Authorization: Bot «M{a:23}.{u:6}.{u:38}»"),
    ("teams-webhook", "«https://acme.webhook.office.com/webhookb2/{uuid}@{uuid}/"
                      "IncomingWebhook/{h:32}/{uuid}»"),
    ("telegram-bot-token", "«{d:10}:AA{u:33}»"),
    ("twilio-api-key", "«SK{h:32}»"),
    ("env-TWILIO_AUTH_TOKEN", "TWILIO_AUTH_TOKEN=«{h:32}»"),
    ("sendgrid-api-key", "«SG.{u:22}.{u:43}»"),
    ("mailgun-key", "«key-{l:32}»"),
    ("mailchimp-key", "«{h:32}-us{d:2}»"),
    ("brevo-key", "«xkeysib-{h:64}-{a:16}»"),
    ("postmark-token-header", "X-Postmark-Server-Token: «{uuid}»"),
    ("env-MAILJET_SECRET_KEY", "MAILJET_SECRET_KEY=«{h:32}»"),
    ("facebook-access-token", "«EAA{a:150}»"),
    # ---- payments and commerce
    ("stripe-secret-key", "stripe.api_key = \"«sk_live_{a:99}»\""),
    ("stripe-test-key", "«sk_test_{a:99}»"),
    ("stripe-restricted-key", "«rk_live_{a:99}»"),
    ("stripe-webhook-secret", "«whsec_{a:32}»"),
    ("shopify-access-token", "«shpat_{h:32}»"),
    ("shopify-custom-app-token", "«shpca_{h:32}»"),
    ("shopify-private-app-password", "«shppa_{h:32}»"),
    ("shopify-shared-secret", "«shpss_{h:32}»"),
    ("square-access-token", "«sq0atp-{u:22}»"),
    ("square-oauth-secret", "«sq0csp-{u:43}»"),
    ("flutterwave-secret-key", "«FLWSECK_TEST-{h:32}-X»"),
    ("shippo-token", "«shippo_live_{h:40}»"),
    ("duffel-token", "«duffel_test_{u:43}»"),
    ("easypost-key", "«EZAK{a:54}»"),
    ("paypal-braintree-token", "«access_token$production${l:16}${h:32}»"),
    ("razorpay-key", "«rzp_live_{a:14}»"),
    # ---- package registries and developer platforms
    ("npm-token", "«npm_{a:36}»"),
    ("npmrc-auth-token", "//registry.npmjs.org/:_authToken=«{uuid}»"),
    ("pypi-token", "«pypi-AgEIcHlwaS5vcmc{u:70}»"),
    ("testpypi-token", "«pypi-AgENdGVzdC5weXBpLm9yZw{u:70}»"),
    ("rubygems-key", "«rubygems_{h:48}»"),
    ("nuget-key", "«oy2{l:43}»"),
    ("clojars-token", "«CLOJARS_{l:60}»"),
    ("linear-api-key", "«lin_api_{a:40}»"),
    ("postman-api-key", "«PMAK-{h:24}-{h:34}»"),
    ("readme-key", "«rdme_{l:70}»"),
    ("figma-token", "«figd_{u:40}»"),
    ("notion-token", "«ntn_{a:46}»"),
    ("notion-integration-secret", "«secret_{a:43}»"),
    ("airtable-pat", "«pat{a:14}.{h:64}»"),
    ("tailscale-key", "«tskey-auth-{a:12}-{a:30}»"),
    ("onepassword-service-token", "«ops_eyJ{b:200}»"),
    ("typeform-token", "«tfp_{u:44}»"),
    ("adafruit-key", "«aio_{a:28}»"),
    ("mapbox-secret-token", "«sk.eyJ{u:60}.{u:22}»"),
    ("contentful-pat", "«CFPAT-{u:43}»"),
    ("hubspot-pat", "«pat-na1-{uuid}»"),
    ("age-secret-key", "«AGE-SECRET-KEY-1{e:58}»"),
    ("jwt-hs256", "«eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ{u:60}.{u:43}»"),
    ("jwt-rs256-with-kid", "id_token=«eyJhbGciOiJSUzI1NiIsImtpZCI6Ij{u:20}.eyJ{u:200}.{u:342}»"),
    # ---- private keys
    ("pem-private-key", PEM.format(kind="")),
    ("pem-rsa-private-key", PEM.format(kind="RSA ")),
    ("pem-ec-private-key", PEM.format(kind="EC ")),
    ("pem-dsa-private-key", PEM.format(kind="DSA ")),
    ("pem-encrypted-private-key", PEM.format(kind="ENCRYPTED ")),
    ("openssh-private-key", PEM.format(kind="OPENSSH ")),
    ("pgp-private-key-block", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n«{b:64}\n{b:64}»\n"
                              "-----END PGP PRIVATE KEY BLOCK-----"),
    ("putty-private-key", "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: me\n"
                          "Public-Lines: 2\n{b:64}\nPrivate-Lines: 1\n«{b:44}»\n"
                          "Private-MAC: {h:64}"),
    ("private-key-cut-off", "key.pem holds -----BEGIN RSA PRIVATE KEY-----\n«{b:64}\n{b:64}»"),
    # ---- credentials in URLs and connection strings
    ("connection-string-postgres", "postgres://app:«{p:16}»@db.internal:5432/app"),
    ("connection-string-postgresql", "DATABASE_URL=postgresql://admin:«{p:20}»@10.0.0.5/prod"),
    ("connection-string-sqlalchemy", "create_engine(\"postgresql+psycopg://u:«{p:14}»@h/db\")"),
    ("connection-string-mysql", "mysql://root:«{p:12}»@localhost:3306/shop"),
    ("connection-string-mongodb-srv", "mongodb+srv://svc:«{p:18}»@cluster0.ab1cd.mongodb.net/x"),
    ("connection-string-redis", "redis://:«{p:24}»@cache:6379/0"),
    ("connection-string-rediss", "rediss://default:«{p:24}»@r.upstash.io:6380"),
    ("connection-string-amqp", "amqp://guest:«{p:12}»@rabbit:5672/"),
    ("connection-string-smtp", "smtp://mailer:«{p:12}»@smtp.example.com:587"),
    ("connection-string-ftp", "ftp://deploy:«{p:12}»@files.example.com/www"),
    ("connection-string-mssql", "Server=tcp:sql.example.com;Database=app;User ID=app;"
                                "Password=«{p:16}»;Encrypt=true"),
    ("connection-string-jdbc", "jdbc:postgresql://db:5432/app?user=app&password=«{p:16}»"),
    ("connection-string-odbc-pwd", "Driver={{ODBC Driver 18}};Server=db;Uid=sa;Pwd=«{p:14}»;"),
    ("basic-auth-url", "curl https://admin:«{p:12}»@api.example.com/v1/health"),
    ("pip-index-url", "pip install --index-url https://__token__:«{p:20}»@pypi.example.com/simple x"),
    # ---- passwords and tokens on a command line
    ("mysql-p-flag", "mysql -uroot -p«{p:12}» shop"),
    ("mysql-p-flag-quoted", "mysql -h db -u app -p'«{p:12}»' -e 'select 1'"),
    ("mysqldump-p-flag", "mysqldump -u backup -p«{p:14}» --all-databases > all.sql"),
    ("mariadb-p-flag", "mariadb -u root -p«{p:10}»"),
    ("sshpass-p", "sshpass -p '«{p:12}»' ssh deploy@10.0.0.7"),
    ("sshpass-p-bare", "sshpass -p «{p:12}» scp a.txt me@host:"),
    ("redis-cli-a", "redis-cli -h cache -a «{p:16}» ping"),
    ("curl-u", "curl -u admin:«{p:12}» https://api.example.com/"),
    ("curl-user-quoted", "curl --user \"ci:«{p:16}»\" https://nexus/repo"),
    ("docker-login-p", "docker login -u me -p «{p:16}» registry.example.com"),
    ("helm-registry-login", "helm registry login ghcr.io -u me -p «{p:16}»"),
    ("keytool-storepass", "keytool -importcert -storepass «{p:12}» -keystore trust.jks -file ca.pem"),
    ("openssl-passin", "openssl rsa -in key.pem -passin pass:«{p:12}» -out plain.pem"),
    ("htpasswd-b", "htpasswd -b .htpasswd admin «{p:12}»"),
    ("ldapsearch-w", "ldapsearch -x -D cn=admin,dc=ex,dc=org -w «{p:12}» -b dc=ex,dc=org"),
    ("smbclient-U", "smbclient //srv/share -U alice%«{p:12}»"),
    ("sqlcmd-P", "sqlcmd -S db -U sa -P «{p:14}» -Q \"select 1\""),
    ("mongosh-p", "mongosh --host db -u admin -p «{p:14}» --authenticationDatabase admin"),
    ("twine-p", "twine upload -u __token__ -p «{p:20}» dist/*"),
    ("flag-password-space", "./deploy --user admin --password «{p:12}» --env prod"),
    ("flag-token-space", "gh-release --token «{a:40}» v1.2.0"),
    ("flag-api-key-space", "cli --api-key «{h:40}» sync"),
    ("flag-client-secret", "az ad sp login --client-secret «{u:34}»"),
    ("flag-password-equals", "psql --password=«{p:12}» -h db"),
    ("wget-password", "wget --http-user=ci --http-password=«{p:12}» https://x/file.tgz"),
    ("powershell-securestring", "ConvertTo-SecureString \"«{p:12}»\" -AsPlainText -Force"),
    ("powershell-env-api-key", "$env:API_KEY = \"«{a:32}»\""),
    ("gh-secret-set-body", "gh secret set NPM_TOKEN --body «{a:36}»"),
    ("az-keyvault-secret-value", "az keyvault secret set --vault-name v --name db --value «{p:16}»"),
    ("aws-secret-string", "aws secretsmanager create-secret --name db --secret-string «{p:16}»"),
    ("aws-configure-set-secret", "aws configure set aws_secret_access_key «{b:40}»"),
    ("echo-to-password-stdin", "echo \"«{p:16}»\" | docker login -u me --password-stdin ghcr.io"),
    ("echo-to-sudo-S", "echo «{p:12}» | sudo -S apt-get update"),
    ("chpasswd-here-string", "chpasswd <<< \"admin:«{p:12}»\""),
    ("net-user-password", "net user admin «{p:12}» /add"),
    ("openssl-enc-k", "openssl enc -aes-256-cbc -k «{p:12}» -in a.txt -out a.enc"),
    ("zip-P", "zip -P «{p:12}» out.zip notes.txt"),
    ("7z-p", "7z a -p«{p:12}» out.7z notes.txt"),
    ("useradd-p", "useradd -m -p «{p:12}» deploy"),
    ("npmrc-auth", "//registry.npmjs.org/:_auth=«{b:32}=»"),
    ("docker-config-auth", "{{\"auths\": {{\"ghcr.io\": {{\"auth\": \"«{b:32}=»\"}}}}}}"),
    ("kubectl-from-literal", "kubectl create secret generic db --from-literal=password=«{p:14}»"),
    ("docker-run-env", "docker run -e POSTGRES_PASSWORD=«{p:14}» postgres:16"),
    ("password-is-colon", "the root password is: «{p:12}»"),
    # ---- headers and cookies
    ("authorization-bearer", "Authorization: Bearer «{u:40}»"),
    ("authorization-basic", "Authorization: Basic «{b:32}=»"),
    ("authorization-token", "Authorization: Token «{h:40}»"),
    ("proxy-authorization", "Proxy-Authorization: Basic «{b:28}»"),
    ("curl-bearer-header", "curl -H 'Authorization: Bearer «{u:48}»' https://api.example.com"),
    ("x-api-key-header", "X-Api-Key: «{a:32}»"),
    ("x-auth-token-header", "X-Auth-Token: «{h:40}»"),
    ("bearer-in-prose", "use Bearer «{a:40}» for the call"),
    ("cookie-header", "Cookie: sessionid=«{l:32}»; theme=dark"),
    ("cookie-header-csrf", "Cookie: csrftoken=«{a:32}»"),
    ("set-cookie-header", "Set-Cookie: __Host-session=«{u:43}»; Path=/; Secure; HttpOnly"),
    ("curl-cookie-flag", "curl --cookie \"auth=«{u:40}»\" https://app.example.com/me"),
    ("curl-b-flag", "curl -b 'SESSION=«{h:32}»' https://app/"),
    # ---- assignments: .env, shells, config files, code
    ("env-DB_PASSWORD", "DB_PASSWORD=«{p:16}»"),
    ("env-POSTGRES_PASSWORD", "POSTGRES_PASSWORD=«{p:16}»"),
    ("env-MYSQL_ROOT_PASSWORD", "      MYSQL_ROOT_PASSWORD: «{p:16}»"),
    ("env-REDIS_PASS", "REDIS_PASS=«{p:16}»"),
    ("env-GITHUB_TOKEN", "export GITHUB_TOKEN=«{a:40}»"),
    ("env-SECRET_KEY", "SECRET_KEY=«{u:50}»"),
    ("env-JWT_SECRET", "JWT_SECRET=«{a:32}»"),
    ("env-SESSION_SECRET", "SESSION_SECRET=\"«{a:32}»\""),
    ("env-CLIENT_SECRET", "OAUTH_CLIENT_SECRET=«{u:40}»"),
    ("env-ENCRYPTION_KEY", "ENCRYPTION_KEY=«{b:44}»"),
    ("env-PRIVATE_KEY", "PRIVATE_KEY=«{h:64}»"),
    ("env-SLACK_SIGNING_SECRET", "SLACK_SIGNING_SECRET=«{h:32}»"),
    ("env-ACCESS_TOKEN", "ACCESS_TOKEN='«{a:40}»'"),
    ("env-PGPASSWORD", "PGPASSWORD=«{p:12}» psql -h db -U app"),
    ("yaml-password", "database:\n  user: app\n  password: «{p:16}»"),
    ("yaml-api-key", "api_key: \"«{a:32}»\""),
    ("json-password", "{{\"user\": \"app\", \"password\": \"«{p:16}»\"}}"),
    ("json-client-secret", "{{\"client_id\": \"abc\", \"client_secret\": \"«{u:40}»\"}}"),
    ("toml-secret-key", "secret_key = \"«{a:40}»\""),
    ("ini-passwd", "[db]\npasswd = «{p:14}»"),
    ("properties-password", "spring.datasource.password=«{p:16}»"),
    ("python-secret-key", "SECRET_KEY = '«{u:50}»'"),
    ("js-api-key", "const apiKey = \"«{a:39}»\";"),
    ("go-token", "token := \"«{a:40}»\""),
    ("ruby-password", "config.password = \"«{p:16}»\""),
    ("php-password", "$password = '«{p:16}»';"),
    ("xml-password", "<password>«{p:16}»</password>"),
    ("netrc-password", "machine api.example.com login me password «{p:16}»"),
    ("fullwidth-colon-password", "password：«{p:12}»"),
    ("fullwidth-equals-password", "密码 password＝«{p:12}»"),
    ("passphrase-assignment", "passphrase = «{p:16}»"),
    # ---- in prose and after a keyword
    ("password-in-prose", "the staging db password is «{p:12}»"),
    ("password-for-host", "password for the staging box: «{p:12}»"),
    ("use-password", "No, use the password «{p:12}» for the staging box"),
    ("pwd-colon", "pwd: «{p:10}» then restart"),
    ("hex-after-api-key", "my API key is «{h:40}»"),
    ("hex-after-token", "token: «{h:40}»"),
    ("hex-after-secret-key", "secret key: «{h:64}»"),
    ("base64-after-secret", "the secret is «{b:48}»"),
]

# Tool inputs as an MCP tool or a hook sends them: (format, value, marked secrets). Each
# marked string is a «…» template drawn like the texts above.
STRUCTURED: list[tuple[str, Any]] = [
    ("json-field-password", {"host": "db", "user": "app", "password": "«{w:9}»"}),
    ("json-field-nested-api-key", {"config": {"service": {"apiKey": "«{w:12}»"}}}),
    ("json-field-header-authorization", {"url": "https://x", "headers": {
        "Authorization": "«{w:6} {w:10}»", "Accept": "application/json"}}),
    ("json-field-cookie", {"headers": {"Cookie": "«{w:8}»"}}),
    ("json-field-env-pairs", {"env": [{"name": "API_TOKEN", "value": "«{w:10}»"},
                                      {"name": "LOG_LEVEL", "value": "debug"}]}),
    ("json-field-list-of-secrets", {"client_secrets": ["«{w:10}»", "«{w:11}»"]}),
    ("json-field-db-password-deep", {"a": [{"b": {"c": {"DB_PASSWORD": "«{w:7}»"}}}]}),
    ("json-field-passwd", {"passwd": "«{w:8}»"}),
    ("json-field-secret", {"secret": "«{w:8}»"}),
    ("json-field-token", {"token": "«{w:8}»", "max_tokens": 512}),
    ("json-field-access-token", {"auth": {"access_token": "«{w:8}»", "token_type": "bearer"}}),
    ("json-field-private-key", {"private_key": "«{w:8}»"}),
]

# (name, template): ≥ 200 texts that look like secrets and are not; they must come back as
# they went in.
LOOK_ALIKES: list[tuple[str, str]] = [
    # ---- version control
    ("git-sha", "{h:40}"),
    ("git-commit-line", "commit {h:40}\nAuthor: Ann <ann@example.com>"),
    ("git-short-log", "{h:7} Fix the parser ({h:7})"),
    ("git-describe", "v1.4.2-14-g{h:7}"),
    ("git-merge-line", "Merge: {h:7} {h:7}"),
    ("git-rev-parse", "$ git rev-parse HEAD\n{h:40}"),
    ("git-diff-index", "index {h:7}..{h:7} 100644"),
    ("git-submodule-status", " {h:40} vendor/lib (v2.1.0)"),
    ("github-compare-url", "https://github.com/o/r/compare/{h:12}...{h:12}"),
    ("github-blob-url", "https://github.com/o/r/blob/{h:40}/src/main.py#L10"),
    # ---- identifiers
    ("uuid", "{uuid}"),
    ("uuid-upper", "request {uuid} failed"),
    ("json-id-uuid", "{{\"id\": \"{uuid}\", \"name\": \"x\"}}"),
    ("x-request-id", "X-Request-Id: {uuid}"),
    ("claude-session-id", "session_id: {uuid}"),
    ("tool-use-id", "tool_use_id: toolu_01{a:22}"),
    ("anthropic-message-id", "msg_01{a:22}"),
    ("anthropic-request-id", "request-id: req_01{a:22}"),
    ("openai-completion-id", "chatcmpl-{a:29}"),
    ("stripe-customer-id", "cus_{a:14}"),
    ("stripe-payment-intent", "pi_{a:24}"),
    ("stripe-price-id", "price_{a:24}"),
    ("stripe-publishable-key", "pk_test_{a:99}"),
    ("slack-channel-id", "channel C{A:10}"),
    ("slack-user-id", "<@U{A:10}>"),
    ("github-node-id", "MDQ6VXNlcj{a:8}"),
    ("mongodb-objectid", "ObjectId(\"{h:24}\")"),
    ("ulid", "01{A:24}"),
    ("snowflake-id", "message {d:18}"),
    ("nanoid-url", "https://example.com/s/{u:21}"),
    ("youtube-url", "https://www.youtube.com/watch?v={u:11}"),
    ("aws-arn", "arn:aws:iam::{d:12}:role/deploy"),
    ("aws-account-id", "account {d:12}"),
    ("aws-request-id", "RequestId: {uuid}"),
    ("aws-instance-id", "i-{h:17}"),
    ("aws-ami-id", "ami-{h:17}"),
    ("aws-vpc-id", "vpc-{h:17}"),
    ("google-client-id", "{d:12}-{l:32}.apps.googleusercontent.com"),
    ("github-app-client-id", "Iv1.{h:16}"),
    ("google-analytics-id", "G-{A:10}"),
    ("k8s-pod-name", "api-{l:10}-{l:5}"),
    ("docker-container-id", "{h:64}"),
    ("docker-short-id", "CONTAINER ID {h:12}"),
    ("docker-image-digest", "FROM python@sha256:{h:64}"),
    ("oci-digest", "\"digest\": \"sha256:{h:64}\""),
    # ---- hashes and checksums
    ("sha256sum-output", "{h:64}  dist/app.tar.gz"),
    ("sha1sum-output", "{h:40}  README.md"),
    ("md5sum-output", "{h:32}  file.bin"),
    ("sha512-output", "{h:128}"),
    ("checksum-line", "SHA256 (app.zip) = {h:64}"),
    ("hash-in-log", "Compiled in 3.2s (hash: {h:20})"),
    ("webpack-chunk", "main.{h:20}.js"),
    ("cache-busting", "app.css?v={h:8}"),
    ("etag-header", "ETag: W/\"{h:32}\""),
    ("s3-etag", "\"ETag\": \"\\\"{h:32}\\\"\""),
    ("content-md5", "Content-MD5: {b:22}=="),
    ("subresource-integrity", "<script src=\"a.js\" integrity=\"sha384-{b:64}\"></script>"),
    ("csp-hash", "Content-Security-Policy: script-src 'sha256-{b:43}='"),
    # ---- lockfiles and package manifests
    ("npm-lock-integrity", "\"integrity\": \"sha512-{b:86}==\""),
    ("npm-lock-resolved", "\"resolved\": \"https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz\""),
    ("pnpm-lock-resolution", "resolution: {{integrity: sha512-{b:86}==}}"),
    ("yarn-lock-integrity", "  integrity sha1-{b:27}="),
    ("yarn-berry-checksum", "  checksum: {h:128}"),
    ("cargo-lock-checksum", "checksum = \"{h:64}\""),
    ("go-sum", "golang.org/x/text v0.14.0 h1:{b:43}="),
    ("go-sum-mod", "golang.org/x/text v0.14.0/go.mod h1:{b:43}="),
    ("go-pseudo-version", "v0.0.0-20240101120000-{h:12}"),
    ("poetry-lock-hash", "{{file = \"x-1.0-py3-none-any.whl\", hash = \"sha256:{h:64}\"}}"),
    ("pip-hash", "requests==2.31.0 --hash=sha256:{h:64}"),
    ("uv-lock-hash", "sdist = {{ url = \"https://files/x.tar.gz\", hash = \"sha256:{h:64}\" }}"),
    ("composer-lock-reference", "\"reference\": \"{h:40}\""),
    ("gemfile-lock-revision", "  revision: {h:40}"),
    ("bazel-sha256", "sha256 = \"{h:64}\""),
    ("terraform-lock-hash", "    \"h1:{b:43}=\","),
    ("terraform-lock-zh", "    \"zh:{h:64}\","),
    ("nix-store-path", "/nix/store/{l:32}-python3-3.11.6"),
    ("nix-hash", "hash = \"sha256-{b:43}=\";"),
    ("flake-lock-narhash", "\"narHash\": \"sha256-{b:43}=\""),
    ("helm-chart-digest", "digest: sha256:{h:64}"),
    ("package-json-version", "\"version\": \"{d:1}.{d:2}.{d:1}\""),
    ("requirements-pin", "numpy=={d:1}.{d:2}.{d:1}"),
    # ---- "key" that is not a secret (cache keys, lock keys, public keys)
    ("cache-key-hex", "key: {h:40}"),
    ("cache-key-sha256", "cache key: {h:64}"),
    ("actions-cache-key", "key: ${{{{ runner.os }}}}-pip-${{{{ hashFiles('**/requirements.txt') }}}}"),
    ("actions-cache-key-resolved", "Cache restored from key: npm-{h:64}"),
    ("lockfile-key", "  key: {h:64}"),
    ("sort-key", "sort key: {h:40}"),
    ("partition-key", "partition key: {h:32}"),
    ("idempotency-key-header", "Idempotency-Key: {h:32}"),
    ("redis-key", "GET user:{h:32}"),
    ("keys-list", "keys: {h:40}, {h:40}"),
    ("hex-public-key", "public key: 04{h:128}"),
    ("json-public-key", "{{\"publicKey\": \"0x04{h:128}\"}}"),
    ("ed25519-public-key-hex", "pubkey: {h:64}"),
    ("ssh-ed25519-public", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{b:43} me@laptop"),
    ("ssh-rsa-public", "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ{b:300} me@host"),
    ("authorized-keys-line", "command=\"/bin/true\" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{b:43}"),
    ("known-hosts-line", "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{b:43}"),
    ("pem-public-key", "-----BEGIN PUBLIC KEY-----\n{b:64}\n{b:24}\n-----END PUBLIC KEY-----"),
    ("pem-certificate", "-----BEGIN CERTIFICATE-----\n{b:64}\n{b:64}\n-----END CERTIFICATE-----"),
    ("pgp-public-key-block", "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n{b:64}\n"
                             "-----END PGP PUBLIC KEY BLOCK-----"),
    ("pgp-fingerprint", "Key fingerprint = {H:4} {H:4} {H:4} {H:4} {H:4}  {H:4} {H:4}"),
    ("gpg-key-id", "sec   rsa4096/{H:16} 2024-01-01 [SC]"),
    ("ssh-fingerprint", "ED25519 key fingerprint is SHA256:{b:43}."),
    ("tls-fingerprint", "SHA1 Fingerprint={H:2}:{H:2}:{H:2}:{H:2}:{H:2}:{H:2}:{H:2}:{H:2}"),
    ("ethereum-address", "0x{h:40}"),
    ("bitcoin-address", "bc1q{l:38}"),
    ("primary-key-prose", "primary key: id"),
    ("foreign-key-prose", "foreign key: user_id references users(id)"),
    ("key-value-yaml", "key: value"),
    ("key-insight", "The key insight is that {w:6} beats {w:7}."),
    ("k8s-secret-key-ref", "secretKeyRef:\n  name: db\n  key: password"),
    # ---- pwd is the working directory
    ("pwd-colon-path", "pwd: /home/me/src"),
    ("pwd-env", "PWD=/home/{w:5}/project"),
    ("oldpwd-env", "OLDPWD=/tmp"),
    ("pwd-command", "$ pwd\n/home/{w:6}/src"),
    ("pwd-json", "{{\"pwd\": \"/Users/{w:5}/code\"}}"),
    ("pwd-windows", "pwd: C:\\Users\\{w:5}\\src"),
    ("pwd-home", "pwd: ~/src/{w:6}"),
    # ---- media and styles
    ("base64-png", "data:image/png;base64,iVBORw0KGgo{b:200}="),
    ("base64-jpeg", "<img src=\"data:image/jpeg;base64,/9j/4AAQSkZJRg{b:160}\">"),
    ("base64-font", "src: url(data:font/woff2;base64,d09GMgABAAAAA{b:120}) format('woff2');"),
    ("base64-svg", "background: url(\"data:image/svg+xml;base64,PHN2Zy{b:100}\");"),
    ("css-hex-colour", "color: #{h:6};"),
    ("css-short-colour", "background: #FFF;"),
    ("css-rgba", "box-shadow: 0 1px 2px rgba(0, 0, 0, 0.{d:2});"),
    ("css-variable", "--primary: #{h:6};"),
    ("tailwind-classes", "class=\"bg-[#{h:6}] text-[#{h:6}]\""),
    ("svg-path", "<path d=\"M{d:2} {d:2}L{d:3} {d:2}Z\" fill=\"#{h:6}\"/>"),
    # ---- versions and numbers
    ("version-string", "{d:1}.{d:2}.{d:1}"),
    ("version-rc", "v2.14.0-rc.{d:1}"),
    ("python-version-var", "__version__ = \"0.{d:1}.{d:1}\""),
    ("semver-build", "1.0.0+{d:14}"),
    ("node-version", "node v20.11.{d:1}"),
    ("user-agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/120.0.{d:4}.{d:3}"),
    ("iso-timestamp", "2026-11-{d:1}{d:1}T10:{d:2}:00.{d:6}Z"),
    ("epoch-millis", "{d:13}"),
    ("ipv4", "10.{d:1}.{d:2}.{d:2}"),
    ("ipv6", "fe80::{h:4}:{h:4}:{h:4}:{h:4}"),
    ("mac-address", "{h:2}:{h:2}:{h:2}:{h:2}:{h:2}:{h:2}"),
    ("test-card-number", "4242 4242 4242 4242"),
    ("phone-number", "+1 555 {d:3} {d:4}"),
    # ---- URLs and addresses
    ("url-with-user", "https://{w:5}@github.com/o/r.git"),
    ("git-ssh-remote", "git@github.com:{w:5}/{w:6}.git"),
    ("ssh-url-with-port", "ssh://git@host:2222/{w:5}.git"),
    ("localhost-url", "http://localhost:8080/api/v1/items?page=2&sort=desc"),
    ("url-query-password-word", "https://example.com/search?q=password+reset"),
    ("npm-scoped-package", "@{w:5}/{w:6}@1.2.3"),
    ("email-address", "{w:6}@example.com"),
    ("s3-uri", "s3://{w:6}-bucket/{h:32}/part-0000.parquet"),
    ("ipfs-cid", "ipfs://bafybei{l:52}"),
    # ---- the words, in prose and code
    ("password-reset-prose", "the password reset flow sends an email"),
    ("password-required", "the password is required"),
    ("password-prompt", "Enter your password:"),
    ("passwordless", "we moved to passwordless login"),
    ("password-manager", "store it in your password manager"),
    ("password-hash-code", "password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt())"),
    ("password-equals-password", "login(username=username, password=password)"),
    ("if-not-password", "if not password:\n    raise ValueError(\"missing\")"),
    ("def-check-password", "def check_password(password: str) -> bool:"),
    ("getpass-prompt", "pw = getpass.getpass(\"Password: \")"),
    ("sql-select-password", "SELECT id, password_hash FROM users WHERE email = ?"),
    ("sql-add-column", "ALTER TABLE users ADD COLUMN password_hash TEXT NOT NULL"),
    ("django-validators", "AUTH_PASSWORD_VALIDATORS = ["),
    ("masked-password", "{{\"password\": \"********\"}}"),
    ("placeholder-password", "PASSWORD=<your-password>"),
    ("env-reference-password", "password: ${{DB_PASSWORD}}"),
    ("actions-secret-reference", "token: ${{{{ secrets.NPM_TOKEN }}}}"),
    ("environ-api-key", "api_key = os.environ[\"API_KEY\"]"),
    ("getenv-token", "token = os.getenv(\"GITHUB_TOKEN\")"),
    ("process-env-secret", "const secret = process.env.JWT_SECRET;"),
    ("erb-secret", "secret_key_base: <%= ENV[\"SECRET_KEY_BASE\"] %>"),
    ("vault-reference", "password: vault:secret/data/db#password"),
    ("your-api-key-placeholder", "api_key: YOUR_API_KEY"),
    ("token-index", "token: tokens[index]"),
    ("token-function", "token = get_token()"),
    ("tokenizer", "tokenizer = AutoTokenizer.from_pretrained(\"bert-base-uncased\")"),
    ("max-tokens", "max_tokens=4096"),
    ("token-count", "token_count: {d:4}"),
    ("token-expired-prose", "the token expired yesterday, refresh it"),
    ("bearer-prose", "Bearer authentication is required"),
    ("bearer-reference", "Authorization: Bearer ${{TOKEN}}"),
    ("token-type-json", "{{\"token_type\": \"Bearer\", \"expires_in\": 3600}}"),
    ("grant-type", "grant_type=client_credentials&client_id={w:8}"),
    ("secret-name", "secret_name: prod-db"),
    ("secret-manager-prose", "the secret lives in AWS Secrets Manager"),
    ("auth-enabled", "AUTH_ENABLED=true"),
    ("password-min-length", "PASSWORD_MIN_LENGTH=12"),
    ("cookie-consent", "the cookie consent banner covers the footer"),
    ("cookie-short-values", "Cookie: theme=dark; lang=en"),
    ("keyboard-prose", "press the key combination Ctrl+K"),
    ("monkey-passport", "monkeypatch the passport bypass in the compass module"),
    # ---- commands that take no secret
    ("mysql-prompting", "mysql -u root -p"),
    ("mysql-port-flag", "mysql -h db -P 3306 -u app -p shop"),
    ("mysql-env-password", "mysql -u app -p\"$MYSQL_PWD\" shop"),
    ("sshpass-env", "sshpass -e ssh deploy@host"),
    ("curl-user-reference", "curl -u \"$USER:$PASS\" https://x"),
    ("docker-login-stdin", "echo \"$CR_PAT\" | docker login ghcr.io -u me --password-stdin"),
    ("password-file-flag", "./server --password-file /run/secrets/db"),
    ("redis-cli-plain", "redis-cli -h cache ping"),
    ("token-file-flag", "gh auth login --with-token < token.txt"),
    ("openssl-passin-env", "openssl rsa -in k.pem -passin env:KEY_PASS"),
    ("ls-double-dash", "git checkout -- src/app.py"),
    ("flag-token-reference", "deploy --token \"$DEPLOY_TOKEN\""),
    ("flag-then-flag", "./deploy --password --interactive --env prod"),
    ("sshpass-not-found", "bash: sshpass: command not found"),
    ("echo-reference-to-stdin", "echo \"$CR_PAT\" | docker login ghcr.io -u me --password-stdin"),
    ("net-user-prompt", "net user admin * /add"),
    ("zip-recursive", "zip -r out.zip src tests"),
    ("gh-pr-list", "gh pr list --state open --limit 20"),
    ("password-is-colon-prose", "the password is: required"),
    ("nsswitch-passwd", "passwd:         files systemd\ngroup:          files systemd"),
    ("yaml-vault-tag", "db_password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256"),
    ("cloudformation-ref", "MasterUserPassword: !Ref DbPassword"),
    # ---- code and text with long runs
    ("python-import-path", "from lore.hooks import redact_payload"),
    ("file-path", "/usr/lib/python3.11/site-packages/{w:8}/__init__.py"),
    ("windows-path", "C:\\Program Files\\{w:6}\\bin\\app.exe"),
    ("java-class", "com.example.{w:8}.service.{w:6}ServiceImpl"),
    ("long-identifier", "test_{w:10}_returns_the_{w:8}_when_the_{w:6}_is_missing"),
    ("camel-case-method", "getUserAccountSettingsForOrganization"),
    ("markdown-table", "| key | value |\n|---|---|\n| timeout | 30 |"),
    ("lorem-ipsum", "Lorem ipsum dolor sit amet, consectetur adipiscing elit"),
    ("log-line", "2026-11-26 10:00:00 INFO worker handled {d:3} events in {d:2} ms"),
    ("stack-trace", "  File \"/app/{w:5}.py\", line {d:3}, in handle\n    return fn(*args)"),
    ("regex-source", r"pattern = re.compile(r'[A-Za-z0-9_-]{{20,}}')"),
    ("shell-history", "cd ~/src && make test && git push origin main"),
    ("jwt-word", "we decode the JWT header (eyJ...) to read the kid"),
    ("sk-placeholder", "set OPENAI_API_KEY to your sk-... key"),
    ("random-words", "{w:5} {w:7} {w:4} {w:9} {w:6}"),
]


def secret_cases(seeds: int = 3) -> list[tuple[str, str, str]]:
    """(format, text, secret) for every format, drawn with ``seeds`` seeds."""
    return [(name, *render(t, seed)) for name, t in SECRETS for seed in range(seeds)]


def look_alike_cases(seeds: int = 3) -> list[tuple[str, str]]:
    """(name, text) for every look-alike, drawn with ``seeds`` seeds."""
    return [(name, render(t, seed)[0]) for name, t in LOOK_ALIKES for seed in range(seeds)]


def structured_case(value: Any, seed: int) -> tuple[Any, list[str]]:
    """The value with its «…» templates drawn, and the secrets drawn."""
    secrets: list[str] = []
    counter = [0]

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            if "«" not in v:
                return v
            counter[0] += 1
            text, secret = render(v, seed * 100 + counter[0])
            secrets.append(secret)
            return text
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(value), secrets
