"""The automations of deployments/automations.yaml, built and applied through
the Prefect client: the one place that turns that file into Prefect objects.

    spec()                       the file, checked
    build(spec, block_id)        Prefect AutomationCore objects, each
                                 send-notification action pointed at the block
    find_block(client, name)     a notification block's id by NAME or TYPE/NAME
    apply(client, automations)   create or update by name; duplicates removed
    save_block(name, kind, url)  a Slack or webhook notification block
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from uuid import UUID

import yaml

from episodic.errors import ConfigError

if TYPE_CHECKING:
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.events.schemas.automations import AutomationCore

ROOT = Path(__file__).resolve().parents[1]
SPEC_PATH = ROOT / "deployments" / "automations.yaml"
NOTIFY = "notify"  # the capability of Prefect's notification blocks


def spec(path: Path = SPEC_PATH) -> dict[str, Any]:
    """The automations file: a default block name and a list of automations."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(str(path), f"cannot read the automations: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("automations"), list):
        raise ConfigError(str(path), "needs a list under `automations`")
    return data


def build(
    data: dict[str, Any], block_id: UUID | None, names: Collection[str] | None = None
) -> list[AutomationCore]:
    """Prefect's automations (those in `names`, when given), every
    send-notification action sent to `block_id`; with no block, only those
    that notify nobody (the zombie-run automation)."""
    from prefect.events.schemas.automations import AutomationCore
    from pydantic import ValidationError

    out: list[AutomationCore] = []
    for i, item in enumerate(data["automations"]):
        item = dict(item)
        if names is not None and item.get("name") not in names:
            continue
        actions = item.get("actions") or []
        notifies = any(a.get("type") == "send-notification" for a in actions)
        if notifies and block_id is None:
            raise ConfigError(f"automations.yaml: {item.get('name')}", "needs a notification block")
        item["actions"] = [
            {**a, "block_document_id": str(block_id)} if a.get("type") == "send-notification" else a
            for a in actions
        ]
        try:
            out.append(AutomationCore.model_validate(item))
        except ValidationError as e:
            name = item.get("name", f"automation {i}")
            msg = e.errors(include_url=False)[0]["msg"]
            raise ConfigError(f"automations.yaml: {name}", msg) from None
    return out


def find_block(client: SyncPrefectClient, name: str) -> tuple[UUID, str]:
    """The id and TYPE/NAME of the notification block called `name` (a block
    name, or TYPE/NAME when several types share it)."""
    slug, _, bare = name.rpartition("/")
    found = [
        d
        for d in client.read_block_documents(include_secrets=False)
        if d.name == bare
        and (not slug or (d.block_type is not None and d.block_type.slug == slug))
        and d.block_schema is not None
        and NOTIFY in d.block_schema.capabilities
    ]
    if not found:
        raise ConfigError(
            "--block",
            f"no notification block named {name!r} on this Prefect server: create one "
            "with `episodic alerts block --slack URL` (or --webhook URL), or in the UI",
        )
    if len(found) > 1:
        kinds = sorted(f"{d.block_type.slug}/{bare}" for d in found if d.block_type)
        raise ConfigError("--block", f"{name!r} names several blocks, pick one: {kinds}")
    block = found[0]
    kind = block.block_type.slug if block.block_type else "?"
    return block.id, f"{kind}/{bare}"


def apply(client: SyncPrefectClient, automations: list[AutomationCore]) -> list[dict[str, Any]]:
    """Create each automation, or update the one of its name (removing any
    duplicates of that name), so applying twice leaves one of each."""
    out: list[dict[str, Any]] = []
    for auto in automations:
        existing = client.read_automations_by_name(auto.name)  # newest first
        if existing:
            keep, extra = existing[0], existing[1:]
            client.update_automation(keep.id, auto)
            for dup in extra:
                client.delete_automation(dup.id)
            out.append({"name": auto.name, "id": str(keep.id), "action": "updated"})
        else:
            new_id = client.create_automation(auto)
            out.append({"name": auto.name, "id": str(new_id), "action": "created"})
    return out


def save_block(name: str, kind: Literal["slack", "webhook"], url: str) -> dict[str, Any]:
    """Save (or overwrite) the notification block `name`: a Slack incoming
    webhook (its URL a secret field), or any URL that takes a JSON POST
    {"subject", "body"}. The URL is never printed. Notification blocks of
    other types with the same name are removed: the name means one block."""
    from prefect.blocks.core import Block
    from prefect.blocks.notifications import CustomWebhookNotificationBlock, SlackWebhook
    from prefect.client.orchestration import get_client
    from pydantic import SecretStr

    if not url.startswith(("https://", "http://")):
        raise ConfigError(f"--{kind}", "must be an http(s) URL")
    block: Block
    if kind == "slack":
        block = SlackWebhook(url=SecretStr(url))
    else:
        block = CustomWebhookNotificationBlock(
            name=name,
            url=url,
            json_data={"subject": "{{subject}}", "body": "{{body}}"},
            headers=None,
            cookies=None,
        )
    block_id = block.save(name, overwrite=True)
    removed = []
    with get_client(sync_client=True) as client:
        for d in client.read_block_documents(include_secrets=False):
            notify = d.block_schema is not None and NOTIFY in d.block_schema.capabilities
            if d.name == name and d.id != block_id and notify:
                client.delete_block_document(d.id)
                removed.append(d.block_type.slug if d.block_type else "?")
    slug = block.get_block_type_slug()
    return {"name": name, "type": slug, "id": str(block_id), "replaced": sorted(removed)}
