"""The patterns :mod:`lore.redact` runs: pure text, no ``re`` until a rule compiles one.

Fixed formats of providers' keys and tokens, commands that take a password or store a secret,
headers and cookies, assignments, passwords in prose in English and 24 other languages, PINs,
credential files (.pgpass, .netrc, wpa_supplicant, wp-config, kubeconfig). What each match
becomes, and which texts a pattern is tried on, is :mod:`lore.redact`'s.
"""

from __future__ import annotations


def bounded(body: str) -> str:
    """A token that is a whole run: no word character, dash or dot glued to either side.

    A leading literal goes first and the boundary is checked behind it, so the regular
    expression engine can search for the literal quickly instead of trying every position."""
    n = 0
    while n < len(body) and (body[n].isalnum() or body[n] in "_-"):
        n += 1
    if n < len(body) and body[n] in "?*+{":
        n -= 1  # the last character is quantified: not part of the fixed prefix
    if n < 2:
        return r"(?<![\w.-])" + body + r"(?![\w-])"
    literal = body[:n]
    return literal + r"(?<![\w.-]" + literal + r")" + body[n:] + r"(?![\w-])"


# ---- fixed formats ------------------------------------------------------------------
# (kind, triggers, pattern): the whole match is replaced. Shapes as published by the
# providers and by secret scanners; order matters only where prefixes overlap.
FORMATS: list[tuple[str, tuple[str, ...], str]] = [
    # Anthropic before OpenAI: both start with "sk-".
    ("api-key", ("sk-ant-",), bounded(r"sk-ant-(?:api|admin|sid)?\d{0,2}-?[A-Za-z0-9_-]{20,}")),
    ("api-key", ("sk-",), bounded(r"sk-(?:proj-|svcacct-|admin-|None-)?(?=[A-Za-z0-9_-]*\d)"
                                  r"[A-Za-z0-9_-]{20,}")),
    ("api-key", ("xai-",), bounded(r"xai-[A-Za-z0-9]{60,}")),
    ("api-key", ("gsk_",), bounded(r"gsk_[A-Za-z0-9]{40,}")),
    ("api-key", ("pplx-",), bounded(r"pplx-[A-Za-z0-9]{40,}")),
    ("api-key", ("r8_",), bounded(r"r8_[A-Za-z0-9]{30,}")),
    ("token", ("hf_",), bounded(r"hf_[A-Za-z]{30,}")),
    # GitHub, GitLab, Bitbucket, Atlassian, Docker, JFrog
    ("token", ("gh",), bounded(r"gh[pousr]_[A-Za-z0-9]{30,}")),
    ("token", ("github_pat_",), bounded(r"github_pat_[A-Za-z0-9_]{22,}")),
    ("token", ("gl",), bounded(r"gl(?:pat|dt|ptt|rt|cbt|ft|imt|agent|oas|soat|wt)-[A-Za-z0-9_-]{20,}")),
    ("token", ("GR1348941",), bounded(r"GR1348941[A-Za-z0-9_-]{20,}")),
    ("token", ("ATBB",), bounded(r"ATBB[A-Za-z0-9_=.-]{28,}")),
    ("token", ("ATATT3",), bounded(r"ATATT3[A-Za-z0-9_=-]{40,}")),
    ("token", ("dckr_pat_",), bounded(r"dckr_pat_[A-Za-z0-9_-]{20,}")),
    ("api-key", ("AKCp",), bounded(r"AKCp[A-Za-z0-9]{60,}")),
    # AWS, Google, Azure, Alibaba, DigitalOcean, Cloudflare-style origin keys
    ("aws-key", ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
     r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])"),
    ("api-key", ("AIza",), bounded(r"AIza[0-9A-Za-z_-]{35}")),
    ("secret", ("GOCSPX-",), bounded(r"GOCSPX-[A-Za-z0-9_-]{24,}")),
    ("token", ("ya29.",), bounded(r"ya29\.[0-9A-Za-z_-]{20,}")),
    ("secret", ("Q~",), r"(?<![\w~.-])[A-Za-z0-9_.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![\w~-])"),
    ("api-key", ("LTAI",), bounded(r"LTAI[A-Za-z0-9]{16,24}")),
    ("token", ("dop_v1_", "doo_v1_", "dor_v1_"), bounded(r"do[por]_v1_[a-f0-9]{64}")),
    ("api-key", ("v1.0-",), bounded(r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}")),
    # Chat and mail
    ("token", ("xox",), bounded(r"xox[abposre]-[A-Za-z0-9-]{10,}")),
    ("token", ("xoxe.",), bounded(r"xoxe\.xox[bp]-\d-[A-Za-z0-9]{100,}")),
    ("token", ("xapp-",), bounded(r"xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]{30,}")),
    ("webhook", ("hooks.slack.com",),
     r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{20,}"),
    ("webhook", ("/api/webhooks/",),
     r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{40,}"),
    ("webhook", ("webhook.office.com",),
     r"https://[a-z0-9-]+\.webhook\.office\.com/webhookb2/[A-Za-z0-9@/_-]{40,}"),
    ("token", (":AA",), bounded(r"\d{8,10}:AA[A-Za-z0-9_-]{33}")),
    ("api-key", ("SG.",), bounded(r"SG\.[A-Za-z0-9_-]{20,24}\.[A-Za-z0-9_-]{40,45}")),
    ("api-key", ("xkeysib-",), bounded(r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}")),
    ("api-key", ("key-",), bounded(r"key-[0-9a-z]{32}")),
    # the boundary behind the hex run, not before it: a leading assertion slows every position
    ("api-key", ("-us",), r"[0-9a-f]{32}(?<![\w.-][0-9a-f]{32})-us\d{1,2}(?![\w-])"),
    ("api-key", ("SK",), bounded(r"SK[0-9a-fA-F]{32}")),
    # Payments and commerce
    ("api-key", ("sk_", "rk_"), bounded(r"(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{16,}")),
    ("secret", ("whsec_",), bounded(r"whsec_[A-Za-z0-9+/=]{24,}")),
    ("token", ("shp",), bounded(r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}")),
    ("token", ("sq0",), bounded(r"sq0(?:atp|csp)-[0-9A-Za-z_-]{22,60}")),
    ("api-key", ("FLWSECK",), bounded(r"FLWSECK(?:_TEST)?-[a-h0-9]{32}-X")),
    ("api-key", ("shippo_",), bounded(r"shippo_(?:live|test)_[a-f0-9]{40}")),
    ("api-key", ("duffel_",), bounded(r"duffel_(?:test|live)_[A-Za-z0-9_-]{43}")),
    ("api-key", ("EZAK", "EZTK"), bounded(r"EZ[AT]K[a-zA-Z0-9]{54}")),
    # Package registries and developer platforms
    ("token", ("npm_",), bounded(r"npm_[A-Za-z0-9]{36}")),
    ("token", ("pypi-AgEIcHlwaS5vcmc",), bounded(r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}")),
    ("token", ("rubygems_",), bounded(r"rubygems_[a-f0-9]{48}")),
    ("api-key", ("oy2",), bounded(r"oy2[a-z0-9]{43}")),
    ("token", ("CLOJARS_",), bounded(r"CLOJARS_[a-z0-9]{60}")),
    ("token", ("pul-",), bounded(r"pul-[a-f0-9]{40}")),
    ("token", ("dapi",), bounded(r"dapi[a-f0-9]{32}(?:-\d)?")),
    ("token", ("dp.",), bounded(r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}")),
    ("token", ("dt0c01.",), bounded(r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}")),
    ("token", ("hvs.", "hvb."), bounded(r"hv[sb]\.[A-Za-z0-9_-]{24,}")),
    ("token", (".atlasv1.",), bounded(r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}")),
    ("token", ("lin_api_",), bounded(r"lin_api_[A-Za-z0-9]{40}")),
    ("api-key", ("PMAK-",), bounded(r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}")),
    ("api-key", ("NRAK-",), bounded(r"NRAK-[A-Z0-9]{27}")),
    ("token", ("sntrys_", "sntryu_"), bounded(r"sntry[su]_[A-Za-z0-9+/=_]{40,}")),
    ("token", ("glc_", "glsa_"),
     bounded(r"(?:glc_[A-Za-z0-9+/]{32,}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})")),
    ("token", ("sbp_",), bounded(r"sbp_[a-f0-9]{40}")),
    ("token", ("pscale_",), bounded(r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{32,64}")),
    ("token", ("fo1_",), bounded(r"fo1_[A-Za-z0-9_-]{43}")),
    ("token", ("pnu_",), bounded(r"pnu_[A-Za-z0-9]{36}")),
    ("token", ("rdme_",), bounded(r"rdme_[a-z0-9]{70}")),
    ("token", ("figd_",), bounded(r"figd_[A-Za-z0-9_-]{40,}")),
    ("token", ("ntn_", "secret_"), bounded(r"(?:ntn_[A-Za-z0-9]{40,}|secret_[A-Za-z0-9]{43})")),
    ("token", ("pat",), bounded(r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}")),
    ("token", ("tskey-",), bounded(r"tskey-(?:api|auth|client|webhook)-[A-Za-z0-9]{6,}-[A-Za-z0-9]{20,}")),
    ("token", ("ops_eyJ",), bounded(r"ops_eyJ[A-Za-z0-9+/=_-]{100,}")),
    ("token", ("tfp_",), bounded(r"tfp_[A-Za-z0-9_.=-]{40,59}")),
    ("token", ("aio_",), bounded(r"aio_[A-Za-z0-9]{28}")),
    ("token", ("sk.eyJ",), bounded(r"sk\.eyJ[A-Za-z0-9_-]{50,}\.[A-Za-z0-9_-]{20,}")),
    ("api-key", ("lsv2_",), bounded(r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}")),
    ("api-key", ("pcsk_",), bounded(r"pcsk_[A-Za-z0-9_]{50,}")),
    ("token", ("AZDO",), bounded(r"[A-Za-z0-9]{76}AZDO[A-Za-z0-9]{4}")),
    ("token", ("HRKU-",), bounded(r"HRKU-[A-Za-z0-9_-]{40,}")),
    ("token", ("nfp_",), bounded(r"nfp_[A-Za-z0-9]{36}")),
    ("api-key", ("rnd_",), bounded(r"rnd_[A-Za-z0-9]{32}")),
    ("token", ("CCIPAT_",), bounded(r"CCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}")),
    ("token", ("bkua_",), bounded(r"bkua_[a-f0-9]{40}")),
    ("token", ("sqp_", "squ_", "sqa_"), bounded(r"sq[pua]_[a-f0-9]{40}")),
    ("api-key", ("api-", "sdk-"),
     bounded(r"(?:api|sdk)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")),
    ("api-key", ("rzp_",), bounded(r"rzp_(?:live|test)_[A-Za-z0-9]{14}")),
    ("token", ("pypi-AgENdGVzdC5weXBpLm9yZw",), bounded(r"pypi-AgENdGVzdC5weXBpLm9yZw[A-Za-z0-9_-]{50,}")),
    ("token", ("CFPAT-",), bounded(r"CFPAT-[A-Za-z0-9_-]{43}")),
    ("token", ("pat-na1-", "pat-eu1-"),
     bounded(r"pat-(?:na|eu)1-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")),
    ("token", ("EAA",), bounded(r"EAA[A-Za-z0-9]{100,}")),
    # Keys that carry their own label
    ("private-key", ("AGE-SECRET-KEY-",), bounded(r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}")),
    ("private-key", ("PuTTY-User-Key-File",),
     r"PuTTY-User-Key-File-\d:.*?(?:Private-MAC: [0-9a-f]+|\Z)"),
    ("jwt", ("eyJ",), bounded(r"eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}")),
]

PEM = (r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
       r"(?:.*?-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|.*\Z)")

# user:password@host — the scheme and user stay, the password goes.
URL_CREDENTIALS = (
    r"(?<![A-Za-z0-9+.-])(?P<head>[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s:/@?#]*):(?P<pw>[^\s@/?#]+)@"
)

AWS_SECRET = (r"(?P<head>\baws_?secret_?(?:access_?)?key[\"']?(?:\s*[:=]\s*|[ \t]+)[\"']?)"
              r"(?P<value>[A-Za-z0-9/+=]{30,})")

# "Authorization: Bearer <token>", "Authorization: Basic <b64>", "X-Api-Key: <key>"
AUTH_HEADER = (
    r"(?P<head>\b(?:Proxy-)?Authorization[\"']?\s*[:=]\s*[\"']?"
    r"(?:(?:Bearer|Basic|Token|Bot|Digest|Negotiate|AWS4-HMAC-SHA256|ApiKey|SSWS)\s+)?)"
    r"(?P<value>[^\s\"',;]+)"
)
KEY_HEADER = (r"(?P<head>\bX-(?:Api-Key|Auth-Token|Access-Token|Secret|Vault-Token|"
              r"Shopify-Access-Token|Figma-Token|Dropbox-Token|Functions-Key|"
              r"Postmark-(?:Server|Account)-Token|Gitlab-Token|Consul-Token|Nomad-Token|"
              r"Goog-Api-Key|RapidAPI-Key|TYPESENSE-API-KEY|Algolia-API-Key|Auth-Key)"
              r"[\"']?\s*:\s*[\"']?)"
              r"(?P<value>[^\s\"',;]+)")
BEARER = r"(?P<head>\bBearer\s+)(?P<value>[A-Za-z0-9._~+/=-]{8,})"

# A password given to a command on its line: `mysql -uroot -pPASS`, `sshpass -p PASS`,
# `redis-cli -a PASS`, `curl -u user:PASS`, `docker login -p PASS`, `keytool -storepass PASS`,
# `--password PASS`, `--api-key KEY` (the `--flag=value` form is an assignment, below).
ARG = r"(?P<value>'[^'\n]{1,4000}'|\"[^\"\n]{1,4000}\"|[^\s'\"`;|&<>]+)"
LINE = r"[ \t](?:[^\n;|&]{0,200}?[ \t])??"  # after the command's name: its words before the flag
CLI = (
    r"(?P<head>(?:"
    r"\b(?:mysql(?:dump|admin|import|show|check|sh|binlog|pump|slap)?|mariadb(?:-dump|-admin)?)\b"
    + LINE + r"-p(?=[^\s-])"
    r"|\bsshpass\b" + LINE + r"-p[ \t]*"
    r"|\b(?:redis-cli|keydb-cli|valkey-cli)\b" + LINE + r"(?:-a|--pass)[ \t]+"
    r"|\b(?:curl|wget|http|httpie)\b" + LINE
    + r"(?:-u|--user|--proxy-user|-U)[ \t]*['\"]?[^\s:'\"]{1,100}:"
    r"|\b(?:docker|podman|helm|buildah|skopeo|oras|nerdctl)[ \t]+(?:\S+[ \t]+)?login\b"
    + LINE + r"-p[ \t]+"
    r"|\bmongo(?:sh|dump|restore|import|export|stat|top)?\b" + LINE + r"-p[ \t]+"
    r"|\bsqlcmd\b" + LINE + r"-P[ \t]*"
    r"|\bldap\w{0,12}\b" + LINE + r"-w[ \t]+"
    r"|\b(?:twine|rclone|psexec)\b" + LINE + r"(?:-p|--password)[ \t]+"
    r"|\bsmbclient\b" + LINE + r"(?:(?:-p|--password)[ \t]+|-U[ \t]*['\"]?[^\s%'\"]{1,100}%)"
    r"|\bhtpasswd\b[ \t]+-\w*b\w*[ \t]+(?:-\w+[ \t]+)*\S+[ \t]+\S+[ \t]+"
    r"|\bConvertTo-SecureString\b[ \t]+(?:-String[ \t]+)?"
    r"|\bgh[ \t]+secret[ \t]+set\b" + LINE + r"(?:-b|--body)[ \t]*=?[ \t]*"
    r"|\bglab[ \t]+variable[ \t]+(?:set|update)\b" + LINE + r"(?:-v|--value)[ \t]*=?[ \t]*"
    r"|\baz[ \t]+(?:keyvault[ \t]+secret[ \t]+set|pipelines[ \t]+variable(?:-group[ \t]+variable)?"
    r"[ \t]+(?:create|update))\b" + LINE + r"--value[ \t]+"
    r"|\baz[ \t]+login\b" + LINE + r"-p[ \t]+"
    r"|\baws[ \t]+ssm[ \t]+put-parameter\b" + LINE + r"--value[ \t]+"
    r"|\bsecurity[ \t]+add-(?:generic|internet)-password\b" + LINE + r"-w[ \t]+"
    r"|\bssh-keygen\b" + LINE + r"-[NP][ \t]+"
    r"|\brabbitmqctl[ \t]+(?:add_user|change_password)[ \t]+\S+[ \t]+"
    r"|\bnmcli\b" + LINE + r"(?:password|wifi-sec\.psk|802-11-wireless-security\.psk)[ \t]+"
    r"|\bmc[ \t]+(?:alias[ \t]+set|config[ \t]+host[ \t]+add)[ \t]+\S+[ \t]+\S+[ \t]+\S+[ \t]+"
    r"|\bopenssl\b" + LINE + r"-k[ \t]+"
    r"|\b(?:un)?zip\b" + LINE + r"(?:-P[ \t]*|--password[ \t]+)"
    r"|\b(?:7z|7za|7zr|rar|unrar)\b" + LINE + r"-p(?=[^\s-])"
    r"|\buseradd\b" + LINE + r"-p[ \t]+"
    r"|\bnet[ \t]+user[ \t]+[\w.$@\\-]{1,64}[ \t]+(?=[^\s/*])"
    r"|\bchpasswd\b[ \t]*<<<[ \t]*['\"]?[^\s:'\"]{1,100}:"
    r"|(?<=[ \t])-(?:storepass|keypass|srcstorepass|deststorepass|srckeypass|destkeypass)[ \t]+"
    r"|(?<=[ \t])-pass(?:in|out|word)?[ \t]+pass:"
    r"))" + ARG
)
# `--password X`, `--api-key X` on any command (`--password=X` is an assignment).
LONG_FLAG = (
    r"(?P<head>(?<![\w-])--(?:[a-z0-9]{1,20}-){0,3}(?:password|passwd|passphrase|token|secret"
    r"|api-?key|access-key|secret-key|private-key|client-secret|auth-token|access-token"
    r"|secret-string)"
    r"[ \t]+(?!--?[a-z][a-z-]*(?:[\s=]|$)))" + ARG  # not the next flag (--verbose)
)

# A secret piped to a command that reads it from stdin: `echo X | docker login
# --password-stdin`, `echo X | sudo -S …`, `echo user:X | chpasswd`, `printf 'X\n' | passwd
# --stdin me`, `echo X | wrangler secret put NAME`, `echo -n X | gcloud secrets create N
# --data-file=-`. printf's format goes too when it holds no `%` (then the secret is an argument).
STDIN_READERS = (
    r"--password-stdin|--pass-stdin|--with-token\b|\bsudo[ \t]+-S\b|\bchpasswd\b"
    r"|-pass(?:in|out)?[ \t]+(?:stdin|fd:0)|\bpasswd\b[^\n|;&]{0,40}?--stdin|\bsmbpasswd\b[^\n|;&]{0,40}?-s\b"
    r"|\bwrangler[ \t]+(?:pages[ \t]+)?secret[ \t]+put\b|\bvercel[ \t]+env[ \t]+add\b"
    r"|\bgh[ \t]+secret[ \t]+set\b|\bdocker[ \t]+secret[ \t]+create\b|\bpodman[ \t]+secret[ \t]+create\b"
    r"|\bgcloud[ \t]+secrets[ \t]+(?:create|versions[ \t]+add)\b|\bdoppler[ \t]+secrets[ \t]+set\b"
    r"|\bfirebase[ \t]+functions:secrets:set\b|\bcircleci[ \t]+context[ \t]+store-secret\b"
    r"|\bpass[ \t]+(?:insert|add)\b|\bsecret-tool[ \t]+store\b|\bvault[ \t]+login[ \t]+-(?![\w-])"
    r"|\bkinit\b|\bhtpasswd[ \t]+-\w*i|--passphrase-fd[ \t]+0|\bansible-vault[ \t]+encrypt_string\b"
    r"|\bcryptsetup\b|\bwg[ \t]+pubkey\b|\bkeyring[ \t]+set\b|\bop[ \t]+item[ \t]+create\b"
)
PIPED = (
    r"(?P<head>\b(?:echo[ \t]+(?:-[neE]+[ \t]+)*|printf[ \t]+(?:--[ \t]+)?"
    r"(?:(?:'[^'\n]{0,40}%[^'\n]{0,40}'|\"[^\"\n]{0,40}%[^\"\n]{0,40}\"|[^\s'\"`;|&<>]*%[^\s'\"`;|&<>]*)"
    r"[ \t]+)?))"
    r"(?P<value>'[^'\n]{1,4000}'|\"[^\"\n]{1,4000}\"|[^\s'\"`;|&<>]+)"
    r"(?=(?:[ \t]+(?:'[^'\n]*'|\"[^\"\n]*\"|[^\s'\"`;|&<>]+)){0,4}"
    r"[ \t]*\|[ \t]*[^\n|;&]{0,200}?(?:" + STDIN_READERS + r"))"
)
# The same readers fed a here-string: `passwd --stdin me <<< 'X'`, `gh secret set N <<< X`.
HERE_STRING = (r"(?P<head>(?:" + STDIN_READERS + r")[^\n|;&]{0,200}?<<<[ \t]*)"
               r"(?P<value>'[^'\n]{1,4000}'|\"[^\"\n]{1,4000}\"|[^\s'\"`;|&<>]+)")

# Commands that store secrets or config vars: every value they are given is a secret,
# whatever its name (`heroku config:set STRIPE_KEY=…`, `dotnet user-secrets set "Db:Pw" "…"`).
# (command, how its values are given): "pairs" NAME=VALUE words (a `--from-literal=`, `--set`
# or `--settings` flag before one is read through); a number n: the n-th word that is not a
# flag; "secret-name": the second word, when the first names a secret (`aws configure set
# aws_secret_access_key X`); "if-secret": the second word after `--secret` or a secret's name.
SETTERS: tuple[tuple[str, str | int], ...] = (
    (r"heroku[ \t]+config:(?:set|add)", "pairs"),
    (r"dokku[ \t]+config:set", "pairs"),
    (r"(?:fly|flyctl)[ \t]+secrets[ \t]+set", "pairs"),
    (r"doppler[ \t]+secrets[ \t]+set", "pairs"),
    (r"supabase[ \t]+secrets[ \t]+set", "pairs"),
    (r"railway[ \t]+variables(?:[ \t]+set)?", "pairs"),
    (r"eb[ \t]+setenv", "pairs"),
    (r"firebase[ \t]+functions:config:set", "pairs"),
    (r"vault[ \t]+kv[ \t]+(?:put|patch)", "pairs"),
    (r"(?:kubectl|oc)[ \t]+create[ \t]+secret", "pairs"),
    (r"az[ \t]+(?:webapp|functionapp)[ \t]+config[ \t]+appsettings[ \t]+set", "pairs"),
    (r"az[ \t]+containerapp[ \t]+secret[ \t]+set", "pairs"),
    (r"dotnet[ \t]+user-secrets[ \t]+set", 2),
    (r"netlify[ \t]+env:set", 2),
    (r"convex[ \t]+env[ \t]+set", 2),
    (r"glab[ \t]+variable[ \t]+(?:set|update)", 2),
    (r"travis[ \t]+env[ \t]+set", 2),
    (r"vercel[ \t]+secrets?[ \t]+add", 2),
    (r"cf[ \t]+set-env", 3),
    (r"aws[ \t]+configure[ \t]+set", "secret-name"),
    (r"(?:npm|pnpm|yarn)[ \t]+config[ \t]+set", "secret-name"),
    (r"git[ \t]+config", "secret-name"),
    (r"pulumi[ \t]+config[ \t]+set", "if-secret"),
)
SETTER_MODES = {i: mode for i, (_, mode) in enumerate(SETTERS)}
WORD = r"(?:[^\s'\"`;|&<>]|'[^'\n]*'|\"[^\"\n]*\")+"  # a shell word, quotes and all
SETTER_NAMES = ("heroku", "dokku", "fly", "flyctl", "doppler", "supabase", "railway", "eb", "firebase",
                "vault", "kubectl", "oc", "az", "dotnet", "netlify", "convex", "glab", "travis",
                "vercel", "cf", "aws", "npm", "pnpm", "yarn", "git", "pulumi")
# A word that starts the next command (`heroku config:set A=1 vercel secrets add …`) ends the
# words of this one.
SETTER = (r"\b(?:" + "|".join(f"(?P<s{i}>{c})" for i, (c, _) in enumerate(SETTERS)) + r")"
          r"(?P<args>(?:(?:[ \t]|\\\r?\n)+(?!(?:" + "|".join(SETTER_NAMES) + r")[ \t])"
          + WORD + r"){1,60})")
# Flags of those commands that take a value: the value is not one of the command's words.
VALUE_FLAGS = frozenset({"-a", "--app", "-p", "--project", "--id", "--context", "--scope", "-s",
                          "--stack", "-e", "--environment", "--env", "-g", "--group", "-c",
                          "--config", "--cwd", "-r", "--repo", "-R", "--org", "-o", "--type",
                          "--description", "-n", "--name", "--namespace", "--mount",
                          "--resource-group", "--service", "--profile", "--deployment"})

# Signed URLs: the signature and session token in the query string (S3, GCS, Azure SAS).
URL_SIGNATURE = (r"(?P<head>[?&](?:sig|signature|X-Amz-Signature|X-Amz-Security-Token|"
                 r"X-Goog-Signature|X-Amz-Credential|Signature)=)(?P<value>[^&\s#\"'<>\[\]]{16,})")

# <password>…</password>, <apiKey>…</apiKey>: the element stays, the text goes.
XML = (r"<(?P<tag>[A-Za-z0-9_.:-]{0,40}?(?:password|passwd|secret|token|api[_-]?key|apikey|"
       r"access[_-]?key|private[_-]?key|credentials?))>(?P<value>[^<\n]{1,4000})</(?P=tag)>")

# Where a CLI match can start: the commands' names and the flags that stand alone.
CLI_ANCHORS = ("mysql", "mariadb", "sshpass", "redis-cli", "keydb-cli", "valkey-cli", "curl",
               "wget", "http", "docker", "podman", "helm", "buildah", "skopeo", "oras", "nerdctl",
               "mongo", "sqlcmd", "ldap", "twine", "rclone", "psexec", "smbclient", "htpasswd",
               "-storepass", "-keypass", "-srcstorepass", "-deststorepass", "-srckeypass",
               "-destkeypass", "-pass", "ConvertTo-SecureString", "gh secret", "az keyvault",
               "openssl", "zip", "unzip", "7z", "rar", "unrar", "useradd", "net user", "chpasswd",
               "glab", "az ", "aws ssm", "security", "ssh-keygen", "rabbitmqctl", "nmcli", "mc ")

# Cookie headers and cookie flags: every cookie's value goes, the names stay.
COOKIE = (r"(?P<head>(?:\b(?:Set-)?Cookie[\"']?[ \t]*[:=][ \t]*|(?<![\w-])--cookie[ \t]+"
          r"|\bcurl\b" + LINE + r"-b[ \t]+)"
          r"[\"']?)(?P<value>[^\s=;\"'`]{1,200}=[^;\s\"'`]*"
          r"(?:;[ \t]*[^\s=;\"'`]{1,200}(?:=[^;\s\"'`]*)?){0,100})")

# key = value: the key stays, the value goes. The key may carry a prefix (DB_PASSWORD,
# github_token, client_secret, _authToken) and be quoted ("password": "...").
WORDS = (r"password|passwd|passphrase|passcode|pwd|pass|secret|token|api[_-]?key|apikey|_auth|"
         r"access[_-]?key|secret[_-]?key|private[_-]?key|client[_-]?secret|credentials?|"
         r"accountkey|sharedaccesskey|sas[_-]?token|signing[_-]?key|encryption[_-]?key|"
         r"master[_-]?key|auth[_-]?key|session[_-]?key|webhook[_-]?secret|psk|pre[_-]?shared[_-]?key|"
         r"presharedkey")
KEY = r"[A-Za-z0-9_.-]{0,40}?(?:" + WORDS + r")"
# The match starts at the key's last word; the callback reads the rest of the key backwards
# (a leading run of any length before each keyword would make the scan quadratic-ish).
ASSIGN = (
    r"(?P<key>pass(?:word|wd|phrase|code)?|pwd|secret|token|key|credentials?|_auth|psk)"
    r"(?![A-Za-z0-9])(?P<sep>(?:[\"']\]?)?[ \t]*(?:=>|:=|=(?!=)|:(?!:)|：|＝)[ \t]*"
    r"|[ \t]+(?=[\"']))"
    r"(?P<value>\"[^\"\n]{1,4000}\"|'[^'\n]{1,4000}'|`[^`\n]{1,4000}`|[^\s,;'\"`]+)"
)

# Passwords in sentences: "the password is X", "use password X", "the staging db password
# is X", "password for the staging box: X", "my pwd's X".
COPULA = (r"[ \t]*(?::|=|->|：|＝)[ \t]*|[ \t]+(?:is|was|will[ \t]+be|should[ \t]+be|would[ \t]+be|"
          r"becomes|reads|remains)(?:[ \t]*[:：])?[ \t]+"
          r"(?:now[ \t]+|still[ \t]+|just[ \t]+|set[ \t]+to[ \t]+)?")
PROSE_PASSWORD = (
    r"(?P<head>\b(?:password|passwd|passphrase|passcode|pwd|pw)(?:'s)?"
    r"(?:[ \t]+(?:for|of|on|to|at|in)[ \t]+(?:[\w.@/-]+[ \t]+){0,3}?[\w.@/-]+(?P<c1>" + COPULA + r")"
    r"|(?P<c2>" + COPULA + r")|[ \t]+(?:to|as)[ \t]+|[ \t]+))"
    r"(?P<value>\"[^\"\n]{1,4000}\"|'[^'\n]{1,4000}'|`[^`\n]{1,4000}`|[^\s\"'`]+)"
)

# Passwords in other languages: "Das Passwort ist X", "le mot de passe du serveur est X",
# "密码是X", "パスワードは X です", "비밀번호는 X", "пароль: X". Words of scripts written without
# spaces (Chinese, Japanese, Korean, Thai) may be glued to the words around them.
I18N_SPACED = (r"passw(?:ort|ord)(?:e?s|et)?|passord(?:et)?|kennw(?:ort|ord)(?:e?s)?"
               r"|mot[ \t]+de[ \t]+passe|mdp"
               r"|contrase(?:ñ|n)a|senha|parola(?:[ \t]+d['’]ordine)?|wachtwoord|adgangskode(?:n)?"
               r"|l(?:ö|o)senord(?:et)?|salasana|heslo|jelsz(?:ó|o|ava)|has(?:ł|l)o"
               r"|(?:ş|s)ifre(?:m|n|niz)?|kata[ \t]+sandi(?:nya)?|mật[ \t]+khẩu|пароль|пароля"
               r"|κωδικός|κωδικό|كلمة[ \t]+(?:المرور|السر)|पासवर्ड")
# (Hebrew too: its article and prepositions are glued to the word)
I18N_GLUED = r"パスワード|暗証番号|密码|密碼|口令|비밀번호|암호|패스워드|รหัสผ่าน|סיסמה|סיסמא"
OF_WORDS = ("für|fuer|vom|von|zum|zur|du|de|des|del|do|da|dos|das|della|dello|di|van|voor"
            "|от|для|dla|till|för|til|pro|na|untuk|ke|al")
# "das Passwort für den Server ist X": up to four words that say whose password it is
# (English "password for …" is the English rule's; "to" is a Polish copula).
I18N_OF = r"[ \t]+(?:" + OF_WORDS + r")[ \t]+(?:[\w.@/-]+[ \t]+){0,3}?[\w.@/-]+(?![\w.@/-])"
PIN_OF = I18N_OF.replace("(?:" + OF_WORDS, "(?:for|of|on|to|at|in|" + OF_WORDS, 1)
I18N_COPULA = (r"[ \t]*(?::|=|：|＝|->|—|–)[ \t]*"
               r"|[ \t]+(?:ist|lautet|war|heißt|est|était|sera|es|era|será|é|è|sarà|is|was|wordt"
               r"|это|—|to|jest|är|er|on|je|là|adalah|este|είναι)[ \t]+"
               r"|[ \t]*(?:是|为|為|は|が|는|은|가|이|คือ|היא)[ \t]*")
I18N_VALUE = (r"\"[^\"\n]{1,4000}\"|'[^'\n]{1,4000}'|`[^`\n]{1,4000}`|«[^»\n]{1,4000}»"
              r"|„[^“”\n]{1,4000}[“”]|“[^”\n]{1,4000}”|「[^」\n]{1,4000}」|『[^』\n]{1,4000}』"
              r"|[^\s\"'`«»„“”「」『』\u3000-\u303f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af"
              r"\uff01-\uff0f\uff1a-\uff20]+")
PROSE_PASSWORD_I18N = (
    r"(?P<head>(?:(?<![\w-])(?:" + I18N_SPACED + r")(?![\w-])|(?:" + I18N_GLUED + r"))"
    r"(?:(?:" + I18N_OF + r")?(?P<c>" + I18N_COPULA + r")[ \t]*|[ \t]+|(?<=[^\x00-\x7f])))"
    r"(?P<value>" + I18N_VALUE + r")"
)
# Looked up in every text: each costs a scan, so only the spellings in ASCII that a user of
# that language types (the others are looked up in texts that are not ASCII).
I18N_TRIGGERS = ("passwort", "passord", "kennwort", "mot de", "mdp", "senha", "parola",
                 "wachtwoord", "salasana", "heslo", "sandi", "contrase", "adgangskode", "haslo",
                 "sifre")
I18N_ANCHORS = ("passwort", "passord", "password", "kennw", "mot de", "mdp", "contrase", "senha",
                "parola", "wachtwoord",
                "adgangskode", "lösenord", "salasana", "heslo", "jelszó", "jelszava", "hasło",
                "haslo", "şifre", "sifre", "kata", "mật", "пароль", "пароля",
                "κωδικ", "كلمة", "סיסמ", "पासवर्ड", "パスワード", "暗証番号", "密码", "密碼",
                "口令", "비밀번호", "암호", "패스워드", "รหัสผ่าน")
# A PIN: "my PIN is 4821", "PIN: 4821", "the pin for the card is 4821", "PIN 4821",
# "PIN-Code: 4821", "code PIN : 4821", "PIN码是4821", "暗証番号は4821".
PIN = (
    r"(?P<head>(?:(?<![\w-])(?:pin|пин)(?:[ \t-]?(?:code|number|nummer|número|numero|код|码|번호))?"
    r"(?:'s)?(?:" + PIN_OF + r")?(?:" + COPULA + r"|" + I18N_COPULA + r")"
    r"|(?<![\w-])(?-i:PIN)[ \t]+|暗証番号(?:は|：|:)?[ \t]*|핀[ \t]*번호(?:는|:)?[ \t]*)[\"'`]?)"
    r"(?P<value>\d{4,12})(?![\w.,:/-]\d|\w)"
)

# Credential files. ~/.pgpass: host:port:database:user:password, one a line (a host with a
# letter or a dot: a MAC address or an IPv6 address is not one).
# Matched against one line at a time (lore.redact's _LineRule); in a sentence, the value ends
# at a blank.
# A host with a letter or a dot (not a MAC address, an IPv6 address or a timestamp), a port,
# then a database and a user in the characters their names are made of.
PGPASS_FIELDS = (r"(?:\*|(?!\d{4}-\d\d-\d\dT)(?=[\w.-]*[A-Za-z.])[A-Za-z0-9][\w.-]{0,252})"
                 r":(?:\*|\d{1,5}):(?:[\w.*@$+-]|\\:){1,100}:(?:[\w.*@$+-]|\\:){1,100}:")
PGPASS = (r"(?P<head>[ \t]*(?![0-9A-Fa-f:.]+(?:\s|$))" + PGPASS_FIELDS + r")"
          r"(?P<value>(?:[^\s\\]|\\.)(?:[^\r\n\\]|\\.){0,4000}?)[ \t]*\r?")
PGPASS_WORDS = (r"(?P<head>(?<![\w.:/@*-])(?![0-9A-Fa-f:.]+(?:\s|$))" + PGPASS_FIELDS + r")"
                r"(?P<value>\S+)")

# ~/.netrc: `machine HOST login USER password X` on one line or several.
NETRC = (r"(?P<head>\b(?:machine[ \t\r\n]+\S+|default)(?:[ \t\r\n]+(?:login|account|port)[ \t\r\n]+\S+)*"
         r"[ \t\r\n]+password[ \t\r\n]+)(?P<value>\S+)")
# A config line that is only `password X` (msmtp, fetchmail, mutt's account files), or such a
# line joined to the next command by `;`, `&&` or `|`.
PASSWORD_LINE = (r"^(?P<head>[ \t]*(?:password|passwd|passphrase)[ \t]+)(?P<value>[^\s;&|]+)"
                 r"[ \t]*(?:$|[;&|])")
# wp-config.php: define('DB_PASSWORD', '…'), the AUTH_KEY and SALT family.
DEFINE = (r"(?P<head>\bdefine[ \t]*\([ \t]*(?P<q>['\"])(?P<name>[A-Za-z0-9_]{1,60})(?P=q)[ \t]*,[ \t]*)"
          r"(?P<value>'(?:[^'\\\n]|\\.){1,4000}'|\"(?:[^\"\\\n]|\\.){1,4000}\")")
# ~/.kube/config: a client's private key, base64 on one line.
KUBE_KEY = r"(?P<head>\bclient-key-data:[ \t]*[\"']?)(?P<value>[A-Za-z0-9+/]{20,}={0,2})"

# A long hex or base64 string right after a key/token/secret word ("my API key is 3f9a...").
NEAR_KEYWORD = (
    r"(?P<head>\b(?P<word>(?:api[ _-]?)?(?:keys?|tokens?|secrets?|passwords?|passwd|credentials?))\b"
    r"[ \t]*(?:(?:is|was|=|:|：|->|here|value)[ \t]*){0,2}[\"'`]?)"
    r"(?P<value>(?<![A-Za-z0-9+/_=-])(?:[0-9a-fA-F]{32,}(?![A-Za-z0-9+/_-])|[A-Za-z0-9+/_-]{40,}={0,2}))"
)

# Values that name where a secret lives rather than being one.
REFERENCE_SOURCE = (
    r"(?:\$|%\(|\{\{|\{%|<|\*{3}|x{4}|\.\.\.|…|os\.environ|os\.getenv|getenv|process\.env|env\(|env\[|"
    r"ENV\[|secrets\.|settings\.|config\.|vault:|none\b|null\b|nil\b|true\b|false\b|undefined\b|"
    r"self\.|this\.|args\.|request\.|input\(|getpass|\w+\(\)?$|"
    # YAML tags that name where the value comes from: `password: !vault |`, `!Ref DbPassword`
    r"!(?:vault|ENV|env|Ref|Sub|GetAtt|ImportValue|Join|Select|FindInMap|secret|include)\b)"
)
